import { EchoMQError } from '../../protocol/errors.js';
import type { Keys } from '../../protocol/keys.js';
import { parseSchedulerJobId } from '../../protocol/scheduler-ids.js';
import type { SchedulerScripts, StartVerdict } from '../../protocol/scheduler-scripts.js';
import type { RedisClient } from '../../protocol/script.js';
import { slotsAfter, slotsAfterRun } from './next-slot.js';
import type { Schedule } from './repeat-options.js';

/** Schedulers one repair round looks at, at most: a round is bounded, and comes again each stalledInterval. */
export const REPAIR_BATCH = 100;
/** A scheduler is looked at by the repair once its next slot is this far behind. */
export const REPAIR_GRACE_MS = 1000;
const START_RETRY_MS = [50, 200, 1000];

/**
 * A worker's side of job schedulers, in one hash tag (docs/protocol.md, "Job schedulers").
 *
 * moveToActive-11 is fixed, so it cannot move a scheduler on when it takes the scheduler's job.
 * The worker that took it does, before the handler runs, with startSchedulerJob-14, which also
 * says whether the job runs at all (a job of a missed slot whose successor is due is skipped). A
 * scheduler keeps the jobs of its next two slots, so a worker that dies between the pickup and
 * that step leaves the second to fire on time, and the first runs once the stalled sweep gives it
 * back. The repair restarts a scheduler whose two jobs are both gone without having run (removed,
 * drained, failed by stalling): each stalledInterval, in the stalled sweep's rhythm.
 */
export class SchedulerChain {
  constructor(
    private readonly scripts: SchedulerScripts,
    private readonly client: RedisClient,
    private readonly keys: Keys,
    private readonly onError: (error: Error) => void,
    /** A partitioned queue's wake-up for the partition (a new job's due time is news to its workers). */
    private readonly wake?: () => void,
  ) {}

  /**
   * The step before the handler of a job taken under `token`: 'run', or 'skipped' (the job is
   * removed). Throws an EchoMQError (-1, -2, -6) when the job is not the worker's any more, and
   * what Redis threw when three tries failed: the job is then left to the stalled sweep.
   */
  async start(jobId: string, token: string, scheduleJson: string | undefined): Promise<StartVerdict> {
    const fired = parseSchedulerJobId(jobId);
    if (!fired || scheduleJson === undefined) return 'run';
    const schedule = JSON.parse(scheduleJson) as Schedule;
    for (let attempt = 0; ; attempt++) {
      const now = Date.now();
      const slots = slotsAfterRun(schedule, fired.slot, now);
      try {
        const verdict = await this.scripts.start(fired.schedulerId, jobId, fired.slot, token, slots, now);
        this.wake?.();
        return verdict;
      } catch (error) {
        // Gone: a resend (by ioredis or by this loop) whose first send landed and skipped the job, or a
        // job removed meanwhile: either way it does not run, and no lock was lost.
        if (error instanceof EchoMQError && error.code === -1) return 'skipped';
        if (error instanceof EchoMQError || attempt >= START_RETRY_MS.length) throw error;
        await new Promise((resolve) => setTimeout(resolve, START_RETRY_MS[attempt]));
      }
    }
  }

  /**
   * One repair round: the schedulers whose next slot is more than REPAIR_GRACE_MS behind (at most
   * REPAIR_BATCH), each restarted from now when its next two jobs are gone or finished. Costs one
   * ZRANGEBYSCORE when none is behind.
   */
  async repair(now = Date.now()): Promise<number> {
    const behind = await this.client.zrangebyscore(this.keys.schedulers, '-inf', now - REPAIR_GRACE_MS, 'LIMIT', 0, REPAIR_BATCH);
    if (behind.length === 0) return 0;
    const pipeline = this.client.pipeline();
    for (const schedulerId of behind) pipeline.hmget(this.keys.scheduler(schedulerId), 'repeat', 'gen');
    const replies = (await pipeline.exec()) ?? [];
    let restarted = 0;
    for (const [i, schedulerId] of behind.entries()) {
      const [error, fields] = replies[i];
      const [scheduleJson, gen] = (fields ?? []) as Array<string | null>;
      if (error || !scheduleJson || !gen) continue;
      try {
        const slots = slotsAfter(JSON.parse(scheduleJson) as Schedule, Date.now());
        if (await this.scripts.repair(schedulerId, gen, slots, Date.now())) restarted++;
      } catch (failure) {
        this.onError(failure as Error);
      }
    }
    if (restarted > 0) this.wake?.();
    return restarted;
  }
}
