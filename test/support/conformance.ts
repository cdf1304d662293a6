import type { Redis } from 'ioredis';

/**
 * The replay of the conformance vectors of `conformance/` (the format is in docs/conformance.md):
 * bind a case to a fresh queue, write its `before`, EVAL the script file as is, and read back the
 * queue's keys in the vector's own notation, so a test compares them with `toEqual`.
 */

/** One key's content: string, hash (flat field/value pairs), list, set, zset (flat member/score), stream. */
export type StoredKey =
  | { type: 'string'; value: string; ttl?: number }
  | { type: 'hash' | 'list' | 'set' | 'zset'; value: string[]; ttl?: number }
  | { type: 'stream'; value: string[][]; ttl?: number };

export interface ConformanceCase {
  name: string;
  before: Record<string, StoredKey>;
  keys: string[];
  argv: string[];
  reply: unknown;
  after: Record<string, StoredKey>;
}

export interface VectorFile {
  script: string;
  about: string;
  cases: ConformanceCase[];
}

/** The placeholder of the queue's hash tag, braces included: `emq:{Q}:wait`. */
export const QUEUE_PLACEHOLDER = '{Q}';

/** The case with every `{Q}` (in keys, values, ARGV and reply) replaced by `{queue}`. */
export function bindQueue<T>(value: T, queue: string): T {
  return JSON.parse(JSON.stringify(value).split(QUEUE_PLACEHOLDER).join(`{${queue}}`)) as T;
}

/** Writes `before` into Redis (the queue's keys must not exist yet). */
export async function writeState(client: Redis, state: Record<string, StoredKey>): Promise<void> {
  for (const [key, stored] of Object.entries(state)) {
    switch (stored.type) {
      case 'string': await client.set(key, stored.value); break;
      case 'hash': await client.hset(key, ...stored.value); break;
      case 'list': await client.rpush(key, ...stored.value); break;
      case 'set': await client.sadd(key, ...stored.value); break;
      case 'zset': await client.zadd(key, ...pairs(stored.value).map(([member, score]) => [score, member]).flat()); break;
      case 'stream': for (const entry of stored.value) await client.xadd(key, '*', ...entry); break;
    }
    if (stored.ttl !== undefined) await client.pexpire(key, stored.ttl);
  }
}

/**
 * Every key of the queue in the vector's notation, shaped after `expected` where the format
 * leaves a choice: a hash's pairs and a set's members in the expected order when they are the
 * same (they are unordered), and a TTL shown as the expected bound when it is within it.
 */
export async function readState(client: Redis, queue: string, expected: Record<string, StoredKey>): Promise<Record<string, StoredKey>> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, found] = await client.scan(cursor, 'MATCH', `*{${queue}}*`, 'COUNT', 1000);
    cursor = next;
    keys.push(...found);
  } while (cursor !== '0');
  keys.sort();
  const state: Record<string, StoredKey> = {};
  for (const key of keys) {
    const type = await client.type(key);
    const want = expected[key];
    let stored: StoredKey;
    if (type === 'string') stored = { type, value: (await client.get(key))! };
    else if (type === 'hash') stored = { type, value: asUnordered(pairs(await client.hgetall(key).then(Object.entries).then((e) => e.flat())), want, 2) };
    else if (type === 'list') stored = { type, value: await client.lrange(key, 0, -1) };
    else if (type === 'set') stored = { type, value: asUnordered((await client.smembers(key)).map((m) => [m]), want, 1) };
    else if (type === 'zset') stored = { type, value: await client.zrange(key, '0', '-1', 'WITHSCORES') };
    else if (type === 'stream') stored = { type, value: (await client.xrange(key, '-', '+')).map(([, fields]) => fields) };
    else throw new Error(`${key}: type ${type} has no notation in the vectors`);
    const pttl = await client.pttl(key);
    if (pttl >= 0) stored.ttl = want?.ttl !== undefined && withinTtl(pttl, want.ttl) ? want.ttl : pttl;
    state[key] = stored;
  }
  return state;
}

/** A TTL of `ttl` in a vector: more than half of it is left, and no more than all of it. */
export function withinTtl(pttl: number, ttl: number): boolean {
  return pttl > ttl / 2 && pttl <= ttl;
}

/**
 * The reply as the vectors write it (integers as numbers, bulk strings as strings, nil as null),
 * with each `{ "atMost": N }` of `expected` standing for any integer in 1..N.
 */
export function matchReply(actual: unknown, expected: unknown): unknown {
  if (isAtMost(expected)) return typeof actual === 'number' && actual > 0 && actual <= expected.atMost ? expected : actual;
  if (Array.isArray(actual) && Array.isArray(expected)) return actual.map((item, i) => matchReply(item, expected[i]));
  return actual;
}

function isAtMost(value: unknown): value is { atMost: number } {
  return typeof value === 'object' && value !== null && 'atMost' in value;
}

function pairs(flat: string[]): string[][] {
  const out: string[][] = [];
  for (let i = 0; i < flat.length; i += 2) out.push([flat[i], flat[i + 1]]);
  return out;
}

/** Unordered groups (hash pairs, set members) flattened in the expected order when both hold the same. */
function asUnordered(groups: string[][], want: StoredKey | undefined, size: number): string[] {
  const canonical = (list: string[][]) => list.map((g) => JSON.stringify(g)).sort().join();
  if (want && want.type !== 'string' && want.type !== 'stream') {
    const expected: string[][] = [];
    for (let i = 0; i < want.value.length; i += size) expected.push(want.value.slice(i, i + size));
    if (canonical(expected) === canonical(groups)) return want.value;
  }
  // Otherwise a hash as Redis lists it (the order of writing, for a small hash), a set sorted.
  return size === 1 ? groups.flat().sort() : groups.flat();
}
