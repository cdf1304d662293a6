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
  let reply: unknown;
  try {
    reply = await client.config('GET', 'maxmemory-policy');
  } catch {
    return undefined;
  }
  const pairs = reply as string[] | Record<string, string>;
  const policy = Array.isArray(pairs) ? pairs[1] : pairs?.['maxmemory-policy'];
  if (policy === undefined || policy === 'noeviction') return undefined;
  return `Redis maxmemory-policy is "${policy}": under memory pressure Redis may evict job keys and jobs would be lost. ` +
    'Set maxmemory-policy to noeviction (CONFIG SET maxmemory-policy noeviction) for the queue\'s Redis';
}
