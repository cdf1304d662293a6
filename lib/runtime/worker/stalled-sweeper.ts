import type { Keys } from '../../protocol/keys.js';
import type { RedisClient } from '../../protocol/script.js';
import type { Scripts } from '../../protocol/scripts.js';
import type { SweepResult } from '../../protocol/script-shapes.js';
import { Periodic } from '../core/periodic.js';

export interface SweeperSettings {
  stalledInterval: number;
  maxStalledCount: number;
}

/**
 * The stalled sweep of one worker: moveStalledJobsToWait-8 every stalledInterval (the script's
 * stalled-check guard keeps it to one sweep per interval across all workers), then the wake-up
 * marker when jobs went back to wait, so a blocked worker takes them at once. The repair of job
 * schedulers runs in the same rhythm (afterSweep).
 */
export class StalledSweeper {
  private readonly periodic: Periodic;

  constructor(
    private readonly scripts: Scripts,
    /** The worker's shared connection, for the wake-up marker and the guard's PTTL. */
    private readonly client: RedisClient,
    private readonly keys: Keys,
    private readonly settings: SweeperSettings,
    private readonly onSwept: (result: SweepResult) => void,
    /** A sweep (or afterSweep) that failed (Redis unreachable, a script error); the next one is due an interval later. */
    private readonly onError: (error: Error) => void,
    /** Runs after each sweep, in its rhythm: the repair of job schedulers (SchedulerChain). */
    private readonly afterSweep?: () => Promise<unknown>,
  ) {
    // Each try is timed to the moment the stalled-check guard expires (its PTTL, read after the
    // try), whoever set it: sweeps then follow each other every stalledInterval with no drift, so a
    // lapsed lock is found within lockDuration + stalledInterval. A fixed timer would find its own
    // guard alive by a few ms and sweep only every second interval.
    this.periodic = new Periodic(settings.stalledInterval, () => this.sweepAndTime(), onError);
  }

  /** Starts sweeping; the first sweep runs at once (it finds what a crashed worker left). */
  start(): void {
    this.periodic.start(0);
  }

  stop(): Promise<void> {
    return this.periodic.stop();
  }

  /** One sweep, now. */
  async sweep(): Promise<SweepResult> {
    const { maxStalledCount, stalledInterval } = this.settings;
    const result = await this.scripts.moveStalledJobsToWait(maxStalledCount, Date.now(), stalledInterval);
    if (result.movedToWait.length > 0) await this.client.zadd(this.keys.marker, 0, '0');
    if (result.movedToWait.length > 0 || result.movedToFailed.length > 0) this.onSwept(result);
    return result;
  }

  /** One try; answers when the next is due: 1 ms after the guard expires. What it throws goes to onError. */
  private async sweepAndTime(): Promise<number | void> {
    await this.sweep();
    // Its failure is reported without upsetting the sweep's timing.
    await this.afterSweep?.().catch((error: unknown) => this.onError(error as Error));
    const guardLeft = await this.client.pttl(this.keys.stalledCheck);
    if (guardLeft > 0) return guardLeft + 1;
    if (guardLeft === -2) return 1; // expired between the two calls: try again at once
  }
}
