import { EchoMQOptionError } from '../../protocol/errors.js';
import type { Keys } from '../../protocol/keys.js';
import { describe } from '../../protocol/names.js';
import { LIMIT_FIELDS, parseLimitValues } from '../../protocol/queue-limits.js';
import type { RedisClient } from '../../protocol/script.js';
import type { RateLimit } from '../../protocol/script-shapes.js';
import { setManualRateLimit } from '../core/manual-rate-limit.js';
import { assertRateLimitMs } from '../core/option-numbers.js';

/**
 * The queue-wide limits, as fields of the queue's meta hash (a partitioned queue's: partition 0's):
 * one HSET, HGET or HDEL each. Workers read them at start and at every heartbeat tick, so a change
 * reaches every worker within one lockRenewTime (docs/limits.md). Each argument is checked before
 * anything is sent: a bad one throws EchoMQOptionError and writes nothing.
 */
export class QueueLimits {
  /** The keys of the queue, or of a partitioned queue's partition 0 (whose meta holds the limits). */
  private readonly keys: Keys;
  private readonly partitions: number;

  constructor(
    private readonly client: RedisClient,
    /** The keys of each partition (one for a plain queue): every one has its limiter. */
    private readonly partitionKeys: readonly Keys[],
    private readonly queueName: string,
  ) {
    this.keys = partitionKeys[0];
    this.partitions = partitionKeys.length;
  }

  /**
   * At most `concurrency` jobs active at once across every worker of the queue. Refused on a
   * partitioned queue: its partitions live in different Redis slots, and no script can count the
   * active jobs of several slots at once; partitionConcurrency bounds each partition instead.
   */
  async setGlobalConcurrency(concurrency: number): Promise<void> {
    assertCount(concurrency, 'concurrency');
    if (this.partitions > 1) {
      throw new EchoMQOptionError('concurrency', `queue ${this.queueName} has ${this.partitions} partitions, each in its own Redis slot: `
        + 'no script can bound the active jobs of all of them at once. Bound each partition with the workers\' partitionConcurrency instead (docs/limits.md)');
    }
    await this.client.hset(this.keys.meta, LIMIT_FIELDS.concurrency, String(concurrency));
  }

  /** The queue-wide concurrency, or null when none is set (BullMQ's answer). */
  async getGlobalConcurrency(): Promise<number | null> {
    const value = await this.client.hget(this.keys.meta, LIMIT_FIELDS.concurrency);
    return parseLimitValues([value, null, null, null]).concurrency ?? null;
  }

  async removeGlobalConcurrency(): Promise<void> {
    await this.client.hdel(this.keys.meta, LIMIT_FIELDS.concurrency);
  }

  /**
   * At most `max` jobs taken per `duration` ms across every worker of the queue (per partition of a
   * partitioned queue, as a worker's `limiter`). While set it wins over the workers' `limiter`.
   */
  async setGlobalRateLimit(max: number, duration: number): Promise<void> {
    assertCount(max, 'max');
    assertCount(duration, 'duration');
    await this.client.hset(this.keys.meta, LIMIT_FIELDS.rateLimitMax, String(max), LIMIT_FIELDS.rateLimitDuration, String(duration));
  }

  /** The queue-wide rate limit, or null when none is set (BullMQ's answer). */
  async getGlobalRateLimit(): Promise<RateLimit | null> {
    const [max, duration] = await this.client.hmget(this.keys.meta, LIMIT_FIELDS.rateLimitMax, LIMIT_FIELDS.rateLimitDuration);
    return parseLimitValues([null, max, duration, null]).rateLimit ?? null;
  }

  async removeGlobalRateLimit(): Promise<void> {
    await this.client.hdel(this.keys.meta, LIMIT_FIELDS.rateLimitMax, LIMIT_FIELDS.rateLimitDuration);
  }

  async rateLimit(expireTimeMs: number): Promise<void> {
    assertRateLimitMs(expireTimeMs);
    await setManualRateLimit(this.client, this.partitionKeys, expireTimeMs);
  }

  async getRateLimitTtl(maxJobs?: number): Promise<number> {
    if (maxJobs !== undefined) assertCount(maxJobs, 'maxJobs');
    const max = maxJobs ?? (await this.getGlobalRateLimit())?.max;
    const ttls = await Promise.all(this.partitionKeys.map(async ({ limiter }) => {
      const [count, pttl] = await Promise.all([this.client.get(limiter), this.client.pttl(limiter)]);
      if (max === undefined) return pttl;
      return max <= Number(count ?? 0) && pttl > 0 ? pttl : 0;
    }));
    return Math.max(...ttls);
  }

  async getMeta(): Promise<QueueMeta> {
    const [concurrency, max, duration, paused] = await this.client.hmget(this.keys.meta, LIMIT_FIELDS.concurrency,
      LIMIT_FIELDS.rateLimitMax, LIMIT_FIELDS.rateLimitDuration, 'paused');
    const limits = parseLimitValues([concurrency, max, duration, null]);
    return {
      paused: paused !== null,
      ...(limits.concurrency !== undefined ? { concurrency: limits.concurrency } : {}),
      ...(limits.rateLimit ? { max: limits.rateLimit.max, duration: limits.rateLimit.duration } : {}),
    };
  }
}

/** What getMeta answers (BullMQ's QueueMeta): the limits set, and whether the queue is paused. */
export interface QueueMeta {
  paused: boolean;
  concurrency?: number;
  max?: number;
  duration?: number;
}

function assertCount(value: unknown, field: string): asserts value is number {
  if (!Number.isSafeInteger(value) || (value as number) <= 0) {
    throw new EchoMQOptionError(field, `must be a whole number above 0, got ${describe(value)}`);
  }
}
