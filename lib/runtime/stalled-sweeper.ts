import type { Scripts, SweepResult } from '../protocol/scripts.js';
import { Periodic } from './periodic.js';

/** Sweep tries per stalledInterval; all but about one find the guard set and change nothing. */
export const SWEEP_TRIES_PER_INTERVAL = 4;

export interface SweeperSettings {
  stalledInterval: number;
  maxStalledCount: number;
}

/**
 * The stalled sweep of one worker: moveStalledJobsToWait-8 every stalledInterval (the script's
 * stalled-check guard keeps it to one sweep per interval across all workers), then the wake-up
 * marker when jobs went back to wait, so a blocked worker takes them at once.
 */
export class StalledSweeper {
  private readonly periodic: Periodic;

  constructor(
    private readonly scripts: Scripts,
    private readonly settings: SweeperSettings,
    private readonly onSwept: (result: SweepResult) => void,
    private readonly onError: (error: Error) => void,
  ) {
    // Try several times per interval: the guard still lets one sweep through per stalledInterval,
    // but the first try after it expires gets it. Trying once per interval, a lone worker would
    // find its own guard still alive by a few ms and sweep only every second interval.
    const attemptEvery = Math.max(1, Math.floor(settings.stalledInterval / SWEEP_TRIES_PER_INTERVAL));
    this.periodic = new Periodic(attemptEvery, () => this.sweepSafely());
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
    if (result.movedToWait.length > 0) await this.scripts.client.zadd(this.scripts.keys.marker, 0, '0');
    if (result.movedToWait.length > 0 || result.movedToFailed.length > 0) this.onSwept(result);
    return result;
  }

  private async sweepSafely(): Promise<void> {
    try {
      await this.sweep();
    } catch (error) {
      this.onError(error as Error);
    }
  }
}
