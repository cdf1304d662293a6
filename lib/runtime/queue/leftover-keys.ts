import type { Keys } from '../../protocol/keys.js';
import type { RedisClient } from '../../protocol/script.js';
import { servers } from '../core/redis-health.js';

/** Keys per SCAN reply and per DEL. */
const SCAN_COUNT = 1000;

/**
 * Every key of the given partitions of one queue (`P:{Q}:*`), a SCAN page at a time, from the
 * client: Redis is never held for long, though a large database takes many pages. Every master of
 * a Cluster is scanned (any may hold the queue's slots); a partitioned queue is scanned once, for
 * all of its partitions. `count` is the SCAN page's COUNT hint.
 */
export async function* queueKeyPages(client: RedisClient, parts: readonly Keys[], count = SCAN_COUNT): AsyncGenerator<string[]> {
  const bases = new Set(parts.map((keys) => keys.base));
  const pattern = parts.length === 1
    ? `${escapeGlob(parts[0].base)}*`
    : `${escapeGlob(parts[0].prefix)}:{${escapeGlob(parts[0].queueName.replace(/#\d+$/, ''))}#*}:*`;
  for (const server of await servers(client)) {
    let cursor = '0';
    do {
      const [next, found] = await server.scan(cursor, 'MATCH', pattern, 'COUNT', count);
      cursor = next;
      // The pattern of a partitioned queue may match another queue named like a partition (`Q#x`).
      const ours = found.filter((key) => bases.has(baseOf(key)));
      if (ours.length > 0) yield ours;
    } while (cursor !== '0');
  }
}

/** `P:{Q}:` of a key of a queue. */
export function baseOf(key: string): string {
  return key.slice(0, key.indexOf('}:') + 2);
}

/**
 * Deletes every key of the given partitions of one queue that is still there once obliterate-2
 * has run; returns how many it deleted. obliterate-2 deletes what the queue's own structures
 * list; two kinds of key no script can list: deduplication keys (`P:{Q}:de:<id>`, named by ids
 * the runtime does not keep), and the flow keys of a parent removed by another job's count or age
 * rule (`P:{Q}:<id>:processed`...: moveToFinished-14, fixed, trims a job's hash and logs only).
 */
export async function deleteLeftoverKeys(client: RedisClient, parts: readonly Keys[]): Promise<number> {
  let deleted = 0;
  for await (const keys of queueKeyPages(client, parts)) {
    // One DEL per key: on a Cluster the keys of a page may be of several partitions (slots).
    deleted += (await Promise.all(keys.map((key) => client.del(key)))).reduce((sum, n) => sum + n, 0);
  }
  return deleted;
}

/** `text` as a SCAN MATCH pattern that matches it literally. */
function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}
