import { EchoMQOptionError } from '../../protocol/errors.js';
import { QUEUE_KEY_NAMES } from '../../protocol/keys.js';
import { describe } from '../../protocol/names.js';
import type { RedisClient } from '../../protocol/script.js';
import type { QueuePart } from '../job/queue-part.js';
import { baseOf, queueKeyPages } from './leftover-keys.js';

/** The keys of a queue that are never a job's hash: its own structures, and a job's other keys. */
const NOT_A_JOB = new Set<string>(QUEUE_KEY_NAMES);
const JOB_SUB_KEY = /:(logs|lock|dependencies|processed|unsuccessful|ignored|pending)$/;
const OTHER_KEYS = /^(de|metrics|workers):/;
/** The SCAN page hint at most. */
const MAX_COUNT = 1000;
/** Candidates one removeOrphanedJobs-8 call judges at most: its work stays within a few ms. */
const MAX_BATCH = 100;

/**
 * queue.removeOrphanedJobs (BullMQ's name): job hashes that no state structure holds, deleted.
 * The candidates come from SCAN pages (`count` keys a page, as the hint, 1 to 1000) and go to
 * removeOrphanedJobs-8 in calls of at most 100 (fewer than `count` or the removals left under
 * `limit` when those are fewer), which judges each atomically.
 * Stops once `limit` were removed (0: no limit). Answers how many were.
 */
export async function removeOrphanedJobs(client: RedisClient, parts: readonly QueuePart[], count: number, limit: number): Promise<number> {
  if (!Number.isInteger(count) || count < 1 || count > MAX_COUNT) throw new EchoMQOptionError('count', `must be a whole number from 1 to ${MAX_COUNT}, got ${describe(count)}`);
  if (!Number.isInteger(limit) || limit < 0) throw new EchoMQOptionError('limit', `must be a whole number >= 0 (0: no limit), got ${describe(limit)}`);
  const byBase = new Map(parts.map((part) => [part.keys.base, part]));
  let removed = 0;
  for await (const keys of queueKeyPages(client, parts.map((part) => part.keys), count)) {
    const candidates = new Map<QueuePart, string[]>();
    for (const key of keys) {
      const part = byBase.get(baseOf(key))!;
      const id = key.slice(part.keys.base.length);
      if (NOT_A_JOB.has(id as never) || JOB_SUB_KEY.test(id) || OTHER_KEYS.test(id)) continue;
      const ids = candidates.get(part);
      if (ids) ids.push(id);
      else candidates.set(part, [id]);
    }
    for (const [part, ids] of candidates) {
      for (let i = 0; i < ids.length;) {
        // Never more candidates than removals left: a call can then never pass the limit.
        const size = Math.min(count, MAX_BATCH, limit > 0 ? limit - removed : MAX_BATCH);
        removed += await part.admin.removeOrphanedJobs(ids.slice(i, i + size));
        i += size;
        if (limit > 0 && removed >= limit) return removed;
      }
    }
  }
  return removed;
}
