import type { RedisClient } from '../protocol/script.js';
import { dropClient } from './connection.js';
import type { Pickup, Scripts } from '../protocol/scripts.js';

/**
 * How a worker gets its next job: moveToActive-11 on the shared connection, and when nothing is
 * ready, BZPOPMIN on the wake-up marker on a connection of its own. The block lasts until a job
 * is added (the marker), the next delayed job is due, or drainDelay passes: no busy polling, and
 * delayed jobs fire on time even while the worker is idle.
 */
export class Fetcher {
  private interrupted = false;

  constructor(
    private readonly scripts: Scripts,
    private readonly blockingClient: RedisClient,
    private readonly lockDuration: number,
    private readonly drainDelaySeconds: number,
  ) {}

  fetch(token: string): Promise<Pickup> {
    return this.scripts.moveToActive(token, this.lockDuration, Date.now());
  }

  /** Waits until there may be work: after a rate-limit window, or on the marker, or a timeout. */
  async waitForWork(pickup: Pickup): Promise<void> {
    if (this.interrupted) return;
    if (pickup.rateLimitedFor > 0) {
      await new Promise((resolve) => setTimeout(resolve, pickup.rateLimitedFor));
      return;
    }
    let timeoutSeconds = this.drainDelaySeconds;
    if (pickup.nextDelayedAt > 0) {
      const untilDue = pickup.nextDelayedAt - Date.now();
      if (untilDue <= 0) return;
      timeoutSeconds = Math.min(timeoutSeconds, untilDue / 1000);
    }
    // Redis takes fractional seconds; 1 ms is its finest step.
    await this.blockingClient.bzpopmin(this.scripts.keys.marker, Math.max(0.001, timeoutSeconds).toFixed(3));
  }

  /** Ends a block in progress by closing the blocking connection (the worker is closing). */
  interrupt(): void {
    this.interrupted = true;
    dropClient(this.blockingClient);
  }
}
