import type { Keys } from '../../protocol/keys.js';
import { parseWorkerInfo, type WorkerInfo } from '../../protocol/queue-limits.js';
import type { RedisClient } from '../../protocol/script.js';

/** Registry entries read per MGET. */
const ENTRIES_PER_READ = 500;

/**
 * queue.getWorkers(): every live worker of the queue, in every process, from the worker registry
 * its workers' heartbeats keep (WorkerPresence): the index's members whose entry has not expired,
 * oldest first. It drops the expired members first (workers gone without a close), and the members
 * whose entry it found gone, so the index holds about as many members as there are live workers,
 * and the read is one round trip for the index and one MGET per 500 workers.
 */
export async function listWorkers(client: RedisClient, keys: Keys): Promise<WorkerInfo[]> {
  const now = Date.now();
  const replies = ((await client.pipeline()
    .zremrangebyscore(keys.workers, '-inf', `(${now}`)
    .zrangebyscore(keys.workers, now, '+inf')
    .exec()) ?? []) as Array<[Error | null, unknown]>;
  for (const [error] of replies) if (error) throw error;
  const ids = replies[1][1] as string[];
  const workers: WorkerInfo[] = [];
  const gone: string[] = [];
  for (let i = 0; i < ids.length; i += ENTRIES_PER_READ) {
    const batch = ids.slice(i, i + ENTRIES_PER_READ);
    const entries = await client.mget(batch.map((id) => keys.worker(id)));
    entries.forEach((entry, j) => {
      const info = parseWorkerInfo(entry);
      if (info) workers.push(info);
      else if (entry === null) gone.push(batch[j]);
    });
  }
  // A member whose entry is gone: a dead worker read in the millisecond between its entry's expiry
  // (Redis's clock) and its member's score (ours). Dropped too, so that the index never holds a
  // worker this call did not list. (A live worker writes its entry before its member.)
  if (gone.length > 0) await client.zrem(keys.workers, ...gone);
  return workers.sort((a, b) => a.startedAt - b.startedAt || a.id.localeCompare(b.id));
}
