import { Cluster, type Redis } from 'ioredis';
import type { RedisClient } from '../protocol/script.js';

/**
 * Redis refused a write because it is out of memory (maxmemory reached under the noeviction
 * policy). Nothing was written: the scripts check memory at their first write, so none runs halfway.
 */
export class RedisFullError extends Error {
  override readonly name = 'RedisFullError';

  constructor(readonly action: string, override readonly cause: Error) {
    super(
      `${action} refused: Redis is out of memory (used memory over maxmemory) and wrote nothing. ` +
        'Free memory (keep fewer finished jobs with removeOnComplete / removeOnFail, or queue.clean()) ' +
        'or raise maxmemory, then try again',
    );
  }
}

/** Turns Redis's OOM reply into a RedisFullError that says what to do; other errors pass as they are. */
export function explainRedisError(error: unknown, action: string): unknown {
  if (error instanceof Error && /^OOM\b/.test(error.message)) return new RedisFullError(action, error);
  return error;
}

/**
 * Why a worker should worry about this Redis's eviction policy, or undefined when it is fine.
 * Any policy but noeviction lets Redis drop job hashes, locks and lists under memory pressure:
 * jobs would vanish silently. A user without CONFIG permission (an ACL user) is not an error:
 * the policy is then simply not checked.
 */
export async function evictionPolicyWarning(client: RedisClient): Promise<string | undefined> {
  let replies: unknown[];
  try {
    replies = await Promise.all((await servers(client)).map((server) => server.config('GET', 'maxmemory-policy')));
  } catch {
    return undefined;
  }
  for (const reply of replies) {
    const pairs = reply as string[] | Record<string, string>;
    const policy = Array.isArray(pairs) ? pairs[1] : pairs?.['maxmemory-policy'];
    if (policy === undefined || policy === 'noeviction') continue;
    return `Redis maxmemory-policy is "${policy}": under memory pressure Redis may evict job keys and jobs would be lost. ` +
      'Set maxmemory-policy to noeviction (CONFIG SET maxmemory-policy noeviction) for the queue\'s Redis';
  }
  return undefined;
}

/**
 * The servers a server-wide check asks: the connection itself, or every master of a Cluster (a
 * keyless command such as CONFIG GET goes to one node of a Cluster, and any master may hold a
 * queue's slot). A Cluster knows its masters once it has loaded its slots: the PING waits for that.
 */
async function servers(client: RedisClient): Promise<Array<Redis | Cluster>> {
  if (!(client instanceof Cluster)) return [client];
  await client.ping();
  const masters = client.nodes('master');
  return masters.length > 0 ? masters : [client];
}

/** The oldest Redis the scripts run on: the batch pickup pops with RPOP and a count (6.2). */
export const MIN_REDIS_VERSION = [6, 2] as const;

/** The Redis a worker connected to is older than MIN_REDIS_VERSION; the worker closes. */
export class RedisVersionError extends Error {
  override readonly name = 'RedisVersionError';
}

/**
 * Why this Redis is too old for the scripts, or undefined when it is recent enough (or INFO is
 * not allowed, as for some ACL users: then it is not checked). Below 6.2 a batched finish would
 * fail at its pickup on every burst.
 */
export async function redisVersionError(client: RedisClient): Promise<RedisVersionError | undefined> {
  let info: string;
  try {
    info = await client.info('server');
  } catch {
    return undefined;
  }
  const found = /redis_version:(\d+)\.(\d+)/.exec(info);
  if (!found) return undefined;
  const [major, minor] = [Number(found[1]), Number(found[2])];
  if (major > MIN_REDIS_VERSION[0] || (major === MIN_REDIS_VERSION[0] && minor >= MIN_REDIS_VERSION[1])) return undefined;
  return new RedisVersionError(`EchoMQ needs Redis ${MIN_REDIS_VERSION.join('.')} or later, this one is ${major}.${minor}: ` +
    'its scripts pop several ready jobs with RPOP and a count. The worker closed without taking a job');
}
