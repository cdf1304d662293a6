import type { QueueLimitValues } from '../../protocol/queue-limits.js';
import type { RateLimit } from '../../protocol/script-shapes.js';

/** The worker options the limits start from. */
export interface OwnLimits {
  /** The worker's `limiter` option: the rate limit while the queue has none of its own. */
  limiter?: RateLimit;
  partitions: number;
  /** A partitioned queue's bound per partition (Infinity: none). */
  partitionConcurrency: number;
}

/**
 * What a worker knows of the limits its pickups and finishes must keep: the queue-wide ones as
 * its start and then each heartbeat tick read them from the queue's meta hash (so a change reaches
 * it within one lockRenewTime), its own `limiter` option, and a manual rate limit (worker.rateLimit,
 * its own at once, another worker's from the meta field). Reading them costs nothing per job: no
 * Redis call, a field or two.
 */
export class WorkerLimits {
  private queue: QueueLimitValues = { rateLimitedUntil: 0 };
  /** When this worker's own worker.rateLimit(ms) lifts. */
  private ownUntil = 0;

  constructor(
    private readonly own: OwnLimits,
    /** A limit changed: a wait that an old value started (a rate-limit window, a full queue) ends, and the fetch loop looks again. */
    private readonly changed: () => void,
  ) {}

  /** Takes the values a start or a tick read; `changed` runs when any differs from the last. */
  update(values: QueueLimitValues): void {
    const before = this.queue;
    this.queue = values;
    if (before.concurrency !== values.concurrency || before.rateLimitedUntil !== values.rateLimitedUntil
      || before.rateLimit?.max !== values.rateLimit?.max || before.rateLimit?.duration !== values.rateLimit?.duration) {
      this.changed();
    }
  }

  /** The rate limit every pickup passes: the queue's (setGlobalRateLimit) wins; else the worker's `limiter`. */
  get rateLimit(): RateLimit | undefined {
    return this.queue.rateLimit ?? this.own.limiter;
  }

  /**
   * The queue-wide concurrency (setGlobalConcurrency) a plain queue's pickups and finishes keep;
   * Infinity when none is set. A partitioned queue has none (Queue refuses to set one): its bound
   * is partitionConcurrency, per partition.
   */
  get globalConcurrency(): number {
    return this.own.partitions > 1 ? Infinity : this.queue.concurrency ?? Infinity;
  }

  /** The most jobs a lane's pickup lets its slot hold in active: partitionConcurrency, or the queue-wide concurrency. */
  get pickupBound(): number {
    return this.own.partitions > 1 ? this.own.partitionConcurrency : this.globalConcurrency;
  }

  /** worker.rateLimit(ms): this worker takes no job for `ms`, from now (a longer limit already set stays). */
  limitFor(ms: number): void {
    this.ownUntil = Math.max(this.ownUntil, Date.now() + ms);
  }

  /** How long (ms) no pickup may start for a manual rate limit, this worker's or the queue's; 0 when none holds. */
  blockedFor(now = Date.now()): number {
    return Math.max(0, this.ownUntil - now, this.queue.rateLimitedUntil - now);
  }
}
