import { Redis } from 'ioredis';
import { randomBytes } from 'node:crypto';

/** The Redis the tests use: the run's private server, or REDIS_URL. */
export function redisUrl(): string {
  const url = process.env.REDIS_URL;
  if (!url) throw new Error('REDIS_URL is not set: the jest global setup starts a redis-server');
  return url;
}

/** A fresh connection to the test Redis; close it with `.disconnect()` or `quit()`. */
export function newClient(): Redis {
  return new Redis(redisUrl(), { maxRetriesPerRequest: null });
}

/** A queue name no other test uses, so tests never see each other's keys. */
export function uniqueQueueName(label = 'q'): string {
  return `${label}-${randomBytes(4).toString('hex')}`;
}

/** Every key of one queue (by its hash tag), sorted: to compare Redis before and after. */
export async function queueKeys(client: Redis, queueName: string, prefix = 'emq'): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, found] = await client.scan(cursor, 'MATCH', `${prefix}:{${queueName}}:*`, 'COUNT', 1000);
    cursor = next;
    keys.push(...found);
  } while (cursor !== '0');
  return keys.sort();
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Polls until `check` returns a truthy value, or fails after `timeoutMs`. */
export async function eventually<T>(check: () => Promise<T> | T, timeoutMs = 10_000, what = 'condition'): Promise<T> {
  const until = Date.now() + timeoutMs;
  let last: T | undefined;
  while (Date.now() < until) {
    last = await check();
    if (last) return last;
    await sleep(20);
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (last: ${JSON.stringify(last)})`);
}
