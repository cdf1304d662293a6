import type { Keys } from '../../protocol/keys.js';
import { MINUTE_MS, recordMetrics, type MetricsType } from '../../protocol/metrics.js';
import type { RedisClient } from '../../protocol/script.js';

/** How long finishes are counted in memory before they are sent (and the longest getMetrics lags a worker). */
export const METRICS_FLUSH_MS = 5_000;

/**
 * A worker's `metrics` (docs/observability.md, "Metrics"): it counts the jobs this worker
 * completed and failed for good, per minute, in memory, and sends each minute's counts with
 * recordMetrics-2 (docs/protocol.md, "Metrics") at most every METRICS_FLUSH_MS while jobs finish,
 * and at close. Why not in the finishing scripts: moveToFinished-14 is fixed, and a worker without
 * metrics must send what it sends today; here a finish costs an increment, and Redis one short
 * call per type and minute per flush.
 */
export class MetricsRecorder {
  /** Per type: minute start (ms) -> finishes not yet sent. */
  private readonly pending: Record<MetricsType, Map<number, number>> = { completed: new Map(), failed: new Map() };
  private timer?: NodeJS.Timeout;
  /** The flush in flight: flushes run one after the other, so a minute's counts go in order. */
  private flushing: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(
    private readonly client: RedisClient,
    private readonly keys: Keys,
    private readonly maxDataPoints: number,
    private readonly report: (error: Error) => void,
  ) {}

  /** One job finished (completed, or failed with no retry left) now. */
  count(type: MetricsType): void {
    const minute = Math.floor(Date.now() / MINUTE_MS) * MINUTE_MS;
    const counts = this.pending[type];
    counts.set(minute, (counts.get(minute) ?? 0) + 1);
    this.arm();
  }

  private arm(): void {
    if (this.closed) return;
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, METRICS_FLUSH_MS).unref();
  }

  /** Sends what is counted; counts a call could not send stay for the next flush (and are reported). */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.send());
    return this.flushing;
  }

  /** The last flush (the worker is closing, its connection still open), tried once: what it cannot send is reported and lost. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.flush();
  }

  private async send(): Promise<void> {
    await Promise.all((['completed', 'failed'] as const).map(async (type) => {
      const counts = this.pending[type];
      const minutes = [...counts.keys()].sort((a, b) => a - b);
      for (const minute of minutes) {
        const jobs = counts.get(minute)!;
        counts.delete(minute);
        try {
          await recordMetrics(this.client, this.keys, type, jobs, minute, this.maxDataPoints);
        } catch (error) {
          counts.set(minute, (counts.get(minute) ?? 0) + jobs);
          this.report(error as Error);
          this.arm(); // try again later, unless closing
          return;
        }
      }
    }));
  }
}
