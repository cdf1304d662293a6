import type { Cluster, Redis } from 'ioredis';
import { randomUUID as uuid } from 'node:crypto';
import { Keys } from '../../lib/index.js';
import { Scripts, type Pickup } from '../../lib/internal.js';
import { AdminScripts } from '../../lib/protocol/admin-scripts.js';
import { JobControlScripts } from '../../lib/protocol/job-control-scripts.js';
import type { NewJob } from '../../lib/protocol/script-shapes.js';
import { scanKeys, uniqueQueueName } from './redis.js';

/** A queue's Keys and script bindings on a test connection, to call the lua scripts directly. */
export function scriptsFor(client: Redis | Cluster, queueName = uniqueQueueName('s')): { keys: Keys; scripts: Scripts; control: JobControlScripts; admin: AdminScripts } {
  const keys = new Keys(queueName);
  return { keys, scripts: new Scripts(client, keys, 1000), control: new JobControlScripts(client, keys, 1000), admin: new AdminScripts(client, keys, 1000) };
}

/** A NewJob as addJob-9 takes it, with plain defaults. */
export function newJob(overrides: Partial<NewJob> = {}): NewJob {
  return { name: 'test', data: '{}', opts: '{}', timestamp: Date.now(), delay: 0, priority: 0, lifo: false, ...overrides };
}

/** Picks up the next job with a fresh token; returns the pickup and that token. */
export async function pickup(scripts: Scripts, lockDuration = 30_000): Promise<{ pickup: Pickup; token: string }> {
  const token = uuid();
  return { pickup: await scripts.moveToActive(token, lockDuration, Date.now()), token };
}

/** The ids a pickup returned, one after another until none is ready. */
export async function pickAll(scripts: Scripts): Promise<string[]> {
  const ids: string[] = [];
  for (;;) {
    const { pickup: next } = await pickup(scripts);
    if (!next.job) return ids;
    ids.push(next.job.id);
  }
}

/** Every key of the queue with its type and contents, to prove a script wrote nothing. */
export async function snapshot(client: Redis | Cluster, keys: Keys): Promise<Record<string, unknown>> {
  const dump: Record<string, unknown> = {};
  for (const key of await scanKeys(client, `${keys.base}*`)) {
    const type = await client.type(key);
    if (type === 'string') dump[key] = await client.get(key);
    else if (type === 'list') dump[key] = await client.lrange(key, '0', '-1');
    else if (type === 'set') dump[key] = (await client.smembers(key)).sort();
    else if (type === 'zset') dump[key] = await client.zrange(key, '0', '-1', 'WITHSCORES');
    else if (type === 'hash') dump[key] = await client.hgetall(key);
    else if (type === 'stream') dump[key] = await client.xlen(key);
  }
  return dump;
}
