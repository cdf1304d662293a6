import type { Keys } from '../../protocol/keys.js';
import { LIMIT_FIELDS, MANUAL_LIMIT_COUNT } from '../../protocol/queue-limits.js';
import type { RedisClient } from '../../protocol/script.js';

/**
 * Tells every worker of the queue to take no job for `ms`, in the two ways workers look:
 * - each partition's limiter key holds MANUAL_LIMIT_COUNT under `PX ms`: every pickup that passes a
 *   rate-limit max (a worker with `limiter`, or any worker while the queue has a global rate limit)
 *   takes nothing until it expires, and answers how long is left, from the next pickup on;
 * - the meta field rateLimitedUntil (now + ms, this machine's clock): the other workers read it at
 *   their next heartbeat tick, so they stop within one lockRenewTime.
 * A later call replaces an earlier one, shorter or not (the last answer from the outside API is the
 * one to follow).
 */
export async function setManualRateLimit(client: RedisClient, partitionKeys: readonly Keys[], ms: number): Promise<void> {
  const until = Date.now() + ms;
  await Promise.all([
    ...partitionKeys.map((keys) => client.set(keys.limiter, MANUAL_LIMIT_COUNT, 'PX', ms)),
    client.hset(partitionKeys[0].meta, LIMIT_FIELDS.rateLimitedUntil, String(until)),
  ]);
}
