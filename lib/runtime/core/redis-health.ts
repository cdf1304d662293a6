import { Cluster, type Redis } from 'ioredis';
import type { RedisClient } from '../../protocol/script.js';

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
  let replies: Array<ServerReply<unknown>>;
  try {
    replies = await askEveryServer(client, (server) => server.config('GET', 'maxmemory-policy'));
  } catch {
    return undefined;
  }
  for (const { reply } of replies) {
    const pairs = reply as string[] | Record<string, string>;
    const policy = Array.isArray(pairs) ? pairs[1] : pairs?.['maxmemory-policy'];
    if (policy === undefined || policy === 'noeviction') continue;
    return `Redis maxmemory-policy is "${policy}": under memory pressure Redis may evict job keys and jobs would be lost. ` +
      'Set maxmemory-policy to noeviction (CONFIG SET maxmemory-policy noeviction) for the queue\'s Redis';
  }
  return undefined;
}

/** One server's answer to a server-wide question, with the server named for messages (host:port). */
export interface ServerReply<T> {
  server: string;
  reply: T;
}

/**
 * Asks `ask` of every server behind `client` at once (see servers()); rejects as soon as one of
 * them rejects, so a caller decides at one place what an unanswered question means.
 */
async function askEveryServer<T>(client: RedisClient, ask: (server: Redis | Cluster) => Promise<T>): Promise<Array<ServerReply<T>>> {
  return Promise.all((await servers(client)).map(async (server) => ({ server: serverName(server), reply: await ask(server) })));
}

/**
 * The servers a server-wide check asks: the connection itself, or every master of a Cluster (a
 * keyless command such as CONFIG GET or INFO goes to one node of a Cluster, and any master may hold
 * a queue's slot). A Cluster knows its masters once it has loaded its slots: the PING waits for that.
 * A ready Cluster has them already, and sends none: a PING goes to any master, and a frozen one
 * would hold the caller whichever master it meant to ask.
 */
export async function servers(client: RedisClient): Promise<Array<Redis | Cluster>> {
  if (!(client instanceof Cluster)) return [client];
  if (client.status !== 'ready') await client.ping();
  const masters = client.nodes('master');
  return masters.length > 0 ? masters : [client];
}

/** host:port of a node (or its unix socket path); a Cluster with no masters known is named "cluster". */
function serverName(server: Redis | Cluster): string {
  if (server instanceof Cluster) return 'cluster';
  const { host, port, path } = server.options;
  return path ? path : `${host}:${port}`;
}

/** The oldest Redis the scripts run on: the batch pickup pops with RPOP and a count (6.2). */
export const MIN_REDIS_VERSION = [6, 2] as const;

/** A version requirement: the oldest [major, minor] and what needs it, for the error. */
export interface VersionNeed {
  version: readonly [number, number];
  because: string;
}

const SCRIPTS_NEED: VersionNeed = { version: MIN_REDIS_VERSION, because: 'its scripts pop several ready jobs with RPOP and a count' };

/** A partitioned queue's workers listen for work with sharded pub/sub. */
export const PARTITIONS_NEED: VersionNeed = { version: [7, 0], because: 'a partitioned queue wakes its workers with sharded pub/sub (SSUBSCRIBE, SPUBLISH)' };

/** The Redis a worker connected to is older than MIN_REDIS_VERSION; the worker closes. */
export class RedisVersionError extends Error {
  override readonly name = 'RedisVersionError';
}

/**
 * Why this Redis is too old for the scripts, or undefined when it is recent enough. On a Cluster
 * every master is read: a cluster mid-upgrade may hold the queue's slot (now, or after a reshard)
 * on its one old master. A server that does not allow INFO (some ACL users) is not checked. Below
 * 6.2 a batched finish would fail at its pickup on every burst.
 */
export async function redisVersionError(client: RedisClient, need: VersionNeed = SCRIPTS_NEED): Promise<RedisVersionError | undefined> {
  const problem = await redisVersionProblem(client, need);
  return problem === undefined ? undefined : workerVersionError(problem);
}

/** A Redis version as [major, minor], from an INFO server reply; undefined when it has none. */
export function parseRedisVersion(info: string): [number, number] | undefined {
  const found = /redis_version:(\d+)\.(\d+)/.exec(info);
  return found ? [Number(found[1]), Number(found[2])] : undefined;
}

/**
 * The RedisVersionError for these INFO server replies (one per server, undefined where INFO was
 * refused), naming every server older than MIN_REDIS_VERSION, oldest first; undefined when none is.
 * Pure: a cluster of mixed versions can be judged without one.
 */
export function versionErrorOf(replies: Array<ServerReply<string | undefined>>, need: VersionNeed = SCRIPTS_NEED): RedisVersionError | undefined {
  const problem = versionProblemOf(replies, need);
  return problem === undefined ? undefined : workerVersionError(problem);
}

function workerVersionError(problem: string): RedisVersionError {
  return new RedisVersionError(`${problem}. The worker closed without taking a job`);
}

/**
 * Why this Redis is too old for the scripts, as one sentence without a consequence (a health
 * check has none to tell), or undefined when it is recent enough or INFO is refused.
 */
export async function redisVersionProblem(client: RedisClient, need: VersionNeed = SCRIPTS_NEED): Promise<string | undefined> {
  let replies: Array<ServerReply<string | undefined>>;
  try {
    replies = await askEveryServer(client, (server) => server.info('server').catch(() => undefined));
  } catch {
    return undefined; // no server list (the Cluster could not load its slots): nothing to judge
  }
  return versionProblemOf(replies, need);
}

/**
 * Whether every server behind `client` runs Redis `version` ([major, minor]) or later, for a
 * command option a newer Redis has (HSCAN NOVALUES, 7.4). False when any server is older, does
 * not say (INFO refused by an ACL, no redis_version) or cannot be asked: the option is then not
 * used, which is always safe, where the scripts' check lets an unknown server pass.
 */
export async function redisAtLeast(client: RedisClient, version: readonly [number, number]): Promise<boolean> {
  let replies: Array<ServerReply<string | undefined>>;
  try {
    replies = await askEveryServer(client, (server) => server.info('server').catch(() => undefined));
  } catch {
    return false;
  }
  const [needMajor, needMinor] = version;
  return replies.every(({ reply }) => {
    const found = reply === undefined ? undefined : parseRedisVersion(reply);
    return found !== undefined && (found[0] > needMajor || (found[0] === needMajor && found[1] >= needMinor));
  });
}

/** What versionErrorOf says, without what the worker does about it. */
function versionProblemOf(replies: Array<ServerReply<string | undefined>>, need: VersionNeed): string | undefined {
  const [needMajor, needMinor] = need.version;
  const tooOld = replies
    .map(({ server, reply }) => ({ server, version: reply === undefined ? undefined : parseRedisVersion(reply) }))
    .filter((found): found is { server: string; version: [number, number] } => found.version !== undefined)
    .filter(({ version: [major, minor] }) => major < needMajor || (major === needMajor && minor < needMinor))
    .sort((a, b) => a.version[0] - b.version[0] || a.version[1] - b.version[1]);
  if (tooOld.length === 0) return undefined;
  const which = tooOld.map(({ server, version }) => `${server} runs ${version.join('.')}`).join(', ');
  return `EchoMQ needs Redis ${need.version.join('.')} or later, and ${which}: ${need.because}`;
}
