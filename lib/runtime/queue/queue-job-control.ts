import { CANCELS_FIELD } from '../../protocol/cancels.js';
import { EchoMQOptionError } from '../../protocol/errors.js';
import { MAX_MOVE_BATCH } from '../../protocol/job-control-scripts.js';
import { describe } from '../../protocol/names.js';
import { assertCancelReason } from '../core/job-cancelled-error.js';
import { DEFAULTS } from '../core/defaults.js';
import { keepRule, type JobOptions } from '../core/job-options.js';
import { canNameJob } from '../job/job.js';
import type { QueuePart } from '../job/queue-part.js';

/** What queue.retryJobs takes (BullMQ's shape). */
export interface RetryJobsOptions {
  /** The finished jobs to send back: 'failed' (the default) or 'completed'. */
  state?: 'failed' | 'completed';
  /** Jobs a script call moves, at most (1 to 10,000). Default 1,000. */
  count?: number;
  /** Only jobs that finished at or before this time (ms since the epoch). Default: when the call began. */
  timestamp?: number;
}

/** What queue.promoteJobs takes (BullMQ's shape). */
export interface PromoteJobsOptions {
  /** Jobs a script call moves, at most (1 to 10,000). Default 1,000. */
  count?: number;
}

/** What the Queue gives its job control: its parts, and where a job id may be. */
export interface JobControlHost {
  parts: readonly QueuePart[];
  /** The parts that may hold a job, in rounds (PartitionRouter.partsThatMayHold). */
  partsThatMayHold(jobId: string): QueuePart[][];
}

const DEFAULT_BATCH = 1000;

const PRIORITY_SPAN = 2 ** 32;

/**
 * The Queue's side of job control (docs/job-control.md): retryJobs and promoteJobs in bounded
 * batches, and the getters count and getCountsPerPriority. Each goes over every
 * partition of a partitioned queue, one at a time, and sums or picks as the Queue's other reads do.
 */
export class QueueJobControl {
  constructor(private readonly host: JobControlHost) {}

  /**
   * Sends finished jobs back to wait, those finished at or before `timestamp`, each as job.retry()
   * would. Each retryJobs-8 call moves at most `count`; it calls again while a call moved that
   * many, and stops once it moved as many as the state held before the cut-off when it began (jobs
   * that finish again meanwhile finish after the cut-off, unless clocks disagree: that bound holds anyway).
   */
  async retryJobs(opts: RetryJobsOptions = {}): Promise<void> {
    assertOptions(opts, 'retryJobs');
    const state = opts.state ?? 'failed';
    if (state !== 'failed' && state !== 'completed') throw new EchoMQOptionError('state', `is ${describe(state)}; retryJobs takes "failed" or "completed"`);
    const count = batchCount(opts.count);
    const cutoff = opts.timestamp ?? Date.now();
    if (!Number.isSafeInteger(cutoff) || cutoff < 0) throw new EchoMQOptionError('timestamp', `must be a time in ms since the epoch (a whole number >= 0), got ${describe(cutoff)}`);
    for (const part of this.host.parts) {
      const held = await part.client.zcount(part.keys.state(state), '-inf', cutoff);
      await inBatches(part, count, held, () => part.control.retryJobs(state, count, cutoff));
    }
  }

  /**
   * Makes every delayed job ready now, the first due first. Each promoteJobs-8 call moves at most
   * `count`; it calls again while a call moved that many, up to as many as delayed held when it began.
   */
  async promoteJobs(opts: PromoteJobsOptions = {}): Promise<void> {
    assertOptions(opts, 'promoteJobs');
    const count = batchCount(opts.count);
    for (const part of this.host.parts) {
      const held = await part.client.zcard(part.keys.delayed);
      await inBatches(part, count, held, () => part.control.promoteJobs(count));
    }
  }

  /**
   * Cancels a job, wherever it is and whoever runs it (docs/locks.md, "Cancelling a job"). A job
   * still to run (waiting, paused, prioritized, delayed, or a parent waiting for its children)
   * fails at once as cancelled, not retried, kept or removed by its removeOnFail (with its flow
   * keys), and a child of a flow tells its parent as a failure at its finish does; a running job is marked, and its worker, in any process,
   * fails it as cancelled within one lockRenewTime (its heartbeat reads the queue's `cancels`
   * counter); a job in active whose worker died fails at its next pickup. True in those cases;
   * false when there is no such job or it has finished (nothing written).
   *
   * Two calls: the job's options are read first (its removeOnFail, and on a partitioned queue the
   * partition that holds it), then cancelJob-12 runs in the job's slot. On a partitioned queue a job
   * marked outside partition 0 is followed by an HINCRBY of partition 0's counter, which is the
   * one workers read: after the mark, so a worker that sees the new count finds it.
   */
  async cancelJob(jobId: unknown, reason?: unknown): Promise<boolean> {
    if (typeof jobId !== 'string' || jobId.length === 0) throw new EchoMQOptionError('jobId', `must be a job id (a non-empty string), got ${describe(jobId)}`);
    assertCancelReason(reason);
    if (!canNameJob(jobId)) return false;
    const found = await this.optionsOf(jobId);
    if (!found) return false;
    const [keepCount, keepAgeMs] = keepRule(found.opts.removeOnFail);
    const outcome = await found.part.control.cancelJob(jobId, reason ?? '', Date.now(), keepCount, keepAgeMs);
    const first = this.host.parts[0];
    if (outcome === 'marked' && found.part !== first) await first.client.hincrby(first.keys.meta, CANCELS_FIELD, 1);
    // A child of a flow failed here: its parent hears now, as from a worker's finish, not from a
    // sweep 10 to 40 s later. Undelivered (Redis failed meanwhile), the notice waits for the sweep.
    if (outcome === 'failed-notice') {
      // The job is failed: a delivery that fails now does not undo that; the notice waits in Redis for the sweep.
      await found.part.context.flowOperations.deliverNotice(found.part.context, jobId).catch(() => undefined);
    }
    return outcome === 'failed' || outcome === 'failed-notice' || outcome === 'marked';
  }

  /** Jobs that are still to run: wait, paused, prioritized and delayed (BullMQ's count()), summed over partitions. */
  async count(): Promise<number> {
    const perPart = await Promise.all(this.host.parts.map((part) => part.counts(['wait', 'paused', 'prioritized', 'delayed'])));
    return perPart.flat().reduce((sum, n) => sum + n, 0);
  }

  /**
   * How many ready jobs each priority has: 0 counts the jobs without one (wait and paused), any
   * other the prioritized jobs of that priority. Keyed by priority, each asked once.
   */
  async getCountsPerPriority(priorities: number[]): Promise<Record<string, number>> {
    if (!Array.isArray(priorities)) throw new EchoMQOptionError('priorities', `must be an array of priorities, got ${describe(priorities)}`);
    priorities.forEach((priority, i) => {
      if (!Number.isInteger(priority) || priority < 0 || priority > DEFAULTS.maxPriority) {
        throw new EchoMQOptionError(`priorities[${i}]`, `must be a whole number from 0 (none) to ${DEFAULTS.maxPriority}, got ${describe(priority)}`);
      }
    });
    const unique = [...new Set(priorities)];
    const perPart = await Promise.all(this.host.parts.map((part) => countsPerPriority(part, unique)));
    const counts: Record<string, number> = {};
    unique.forEach((priority, i) => (counts[String(priority)] = perPart.reduce((sum, partCounts) => sum + partCounts[i], 0)));
    return counts;
  }

  /** The part holding the job and its stored options (`{}` when unreadable); undefined when no part has it. */
  private async optionsOf(jobId: string): Promise<{ part: QueuePart; opts: JobOptions } | undefined> {
    for (const candidates of this.host.partsThatMayHold(jobId)) {
      const found = await Promise.all(candidates.map((part) => part.client.hget(part.keys.job(jobId), 'opts')));
      const index = found.findIndex((json) => json !== null);
      if (index >= 0) return { part: candidates[index], opts: parseOpts(found[index]!) };
    }
    return undefined;
  }

}

/** Calls `batch` while it moved `count` ids, and no more than `held` ids in all; wakes the partition after a batch that moved any. */
async function inBatches(part: QueuePart, count: number, held: number, batch: () => Promise<number>): Promise<void> {
  for (let moved = 0; moved < held;) {
    const took = await batch();
    if (took > 0) part.wake();
    moved += took;
    if (took < count) return;
  }
}

function countsPerPriority(part: QueuePart, priorities: number[]): Promise<number[]> {
  const pipeline = part.client.pipeline();
  for (const priority of priorities) {
    if (priority === 0) {
      pipeline.llen(part.keys.wait);
      pipeline.llen(part.keys.paused);
    } else {
      // Scores priority * 2^32 + a counter below 2^32: the priority's whole band, its upper bound excluded.
      pipeline.zcount(part.keys.prioritized, priority * PRIORITY_SPAN, `(${(priority + 1) * PRIORITY_SPAN}`);
    }
  }
  return pipeline.exec().then((replies) => {
    const values = (replies ?? []).map(([error, reply]) => {
      if (error) throw error;
      return reply as number;
    });
    let at = 0;
    return priorities.map((priority) => (priority === 0 ? values[at++] + values[at++] : values[at++]));
  });
}

/** A job's stored options; a value that is not a JSON object reads as none (its removeOnFail: keep). */
function parseOpts(json: string): JobOptions {
  try {
    const opts = JSON.parse(json) as unknown;
    return typeof opts === 'object' && opts !== null && !Array.isArray(opts) ? (opts as JobOptions) : {};
  } catch {
    return {};
  }
}

function assertOptions(opts: unknown, method: string): void {
  if (typeof opts !== 'object' || opts === null || Array.isArray(opts)) throw new EchoMQOptionError(`${method} options`, `must be an object, got ${describe(opts)}`);
}

function batchCount(count: unknown): number {
  if (count === undefined) return DEFAULT_BATCH;
  if (!Number.isInteger(count) || (count as number) < 1 || (count as number) > MAX_MOVE_BATCH) {
    throw new EchoMQOptionError('count', `must be a whole number from 1 to ${MAX_MOVE_BATCH} (jobs a script call moves; the Queue calls again for the rest), got ${describe(count)}`);
  }
  return count as number;
}
