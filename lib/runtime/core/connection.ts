import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import { EchoMQOptionError } from '../../protocol/errors.js';
import type { RedisClient } from '../../protocol/script.js';

/**
 * What every Queue, Worker and QueueEvents accepts as `connection`: an existing ioredis instance
 * (Redis or Cluster), ioredis options, or a `redis://` URL. An instance given by the caller is
 * shared and never closed by EchoMQ; one EchoMQ creates it also closes.
 */
export type ConnectionInput = Redis | Cluster | RedisOptions | string;

/** A connection and whether EchoMQ owns it (so must close it). */
export interface OwnedClient {
  client: RedisClient;
  owned: boolean;
}

export function isClient(value: unknown): value is RedisClient {
  return value instanceof Redis || value instanceof Cluster;
}

/**
 * EchoMQ's own connections never give up on a command while Redis is away
 * (maxRetriesPerRequest: null): a worker's finish must wait for Redis to come back, not fail.
 */
const RESILIENT: RedisOptions = { maxRetriesPerRequest: null };

/**
 * Refuses a connection with ioredis's `keyPrefix` (an instance's, an options object's, or a URL's
 * `?keyPrefix=`), before any connection is made, as BullMQ refuses it. ioredis prefixes the keys
 * it knows of (a command's keys, a script's KEYS), but the scripts build every job's keys from the
 * queue's prefix sent as an argument, which it leaves alone: one queue's keys would land under two
 * prefixes, and the queue could not find its own jobs. EchoMQ's `prefix` option is the namespace.
 */
export function assertConnection(input: ConnectionInput | undefined): void {
  const keyPrefix = keyPrefixOf(input);
  if (keyPrefix) {
    throw new EchoMQOptionError('connection.keyPrefix', `ioredis's keyPrefix (${JSON.stringify(keyPrefix)}) is not supported: `
      + 'the scripts build job keys from the queue\'s prefix, which ioredis does not prefix; use the prefix option instead');
  }
}

function keyPrefixOf(input: ConnectionInput | undefined): unknown {
  if (input instanceof Cluster) return input.options.keyPrefix || input.options.redisOptions?.keyPrefix;
  if (input instanceof Redis) return input.options.keyPrefix;
  if (typeof input === 'string') return urlKeyPrefix(input);
  return input?.keyPrefix;
}

/** ioredis reads a URL's query parameters as options: `redis://host?keyPrefix=p:` sets one. */
function urlKeyPrefix(url: string): string | null {
  try {
    return new URL(url).searchParams.get('keyPrefix');
  } catch {
    return null; // not a URL ioredis parses into options (a host:port, a socket path)
  }
}

/** The shared (non-blocking) connection: the caller's instance as is, or a new one. */
export function connect(input: ConnectionInput | undefined): OwnedClient {
  assertConnection(input);
  if (isClient(input)) return { client: input, owned: false };
  return { client: create(input), owned: true };
}

/**
 * A connection of its own, for a blocking command (BZPOPMIN, XREAD BLOCK) that would stall every
 * other command on a shared one. From an instance it is a duplicate with the same options.
 */
export function connectBlocking(input: ConnectionInput | undefined): RedisClient {
  assertConnection(input);
  if (input instanceof Cluster) return quiet(input.duplicate() as RedisClient);
  if (input instanceof Redis) return quiet(input.duplicate(RESILIENT) as RedisClient);
  return create(input);
}

/**
 * A connection for a partitioned queue's wake channels (SSUBSCRIBE): a subscribed connection runs
 * nothing else. On a Cluster, ioredis keeps one subscriber per node (`shardedSubscribers`), so one
 * worker listens on every partition with one connection per node. Named `<name or echomq>:wake`.
 */
export function connectSubscriber(input: ConnectionInput | undefined): RedisClient {
  return connectNamed(input, 'wake', { shardedSubscribers: true });
}

/**
 * The heartbeat's own connection, a duplicate of `source` (Redis or Cluster, same options): the
 * LockManager's renewals go on it, so they never queue behind the bulk traffic of the shared one
 * (an addBulk pipeline, a batch of finishes). Named `<source name or echomq>:heartbeat` in CLIENT LIST.
 */
export function connectRenewal(source: RedisClient): RedisClient {
  return duplicateNamed(source, 'heartbeat');
}

/**
 * A QueueEvents' reading connection (XREAD BLOCK), as connectBlocking makes it, named
 * `<connectionName or echomq>:events` in CLIENT LIST: a partitioned queue's QueueEvents holds one
 * per partition on a Cluster, and they are told apart from the app's other connections by name.
 */
export function connectEventsReader(input: ConnectionInput | undefined): RedisClient {
  return connectNamed(input, 'events');
}

/** A connection of its own for `role`, as connectBlocking makes it, named `<connectionName or echomq>:<role>`. */
function connectNamed(input: ConnectionInput | undefined, role: string, clusterOptions: ClusterOptions = {}): RedisClient {
  assertConnection(input);
  if (isClient(input)) return duplicateNamed(input, role, clusterOptions);
  if (typeof input === 'string') return quiet(new Redis(input, { ...RESILIENT, connectionName: `echomq:${role}` }));
  return create({ ...input, connectionName: `${input?.connectionName ?? 'echomq'}:${role}` });
}

/** A duplicate of `source` with the same options (and, on a Cluster, `clusterOptions`), named `<source name or echomq>:<role>`. */
function duplicateNamed(source: RedisClient, role: string, clusterOptions: ClusterOptions = {}): RedisClient {
  if (source instanceof Cluster) {
    const named = `${source.options.redisOptions?.connectionName ?? 'echomq'}:${role}`;
    return quiet(source.duplicate([], { ...clusterOptions, redisOptions: { ...source.options.redisOptions, connectionName: named } }) as RedisClient);
  }
  return quiet(source.duplicate({ ...RESILIENT, connectionName: `${source.options.connectionName ?? 'echomq'}:${role}` }) as RedisClient);
}

function create(input: RedisOptions | string | undefined): Redis {
  return quiet(typeof input === 'string' ? new Redis(input, RESILIENT) : new Redis({ ...input, ...RESILIENT }));
}

/**
 * A connection EchoMQ created gets an error listener: ioredis reconnects by itself and a command
 * that fails reaches its caller, but without a listener it prints "Unhandled error event" at every
 * reconnect attempt while Redis is away.
 */
function quiet<T extends RedisClient>(client: T): T {
  client.on('error', () => undefined);
  return client;
}

/** How long closeClient waits for QUIT's answer by default before it drops the connection. */
export const QUIT_WAIT_MS = 5000;

/**
 * Closes a connection EchoMQ owns; QUIT when it is up, else just drops it. A QUIT not answered
 * within `withinMs` (Redis stopped or cut off while the socket stays open) drops the connection:
 * a shutdown must never wait on a Redis that does not answer.
 */
export async function closeClient(client: RedisClient, withinMs = QUIT_WAIT_MS): Promise<void> {
  if (client.status === 'end') return;
  if (client.status !== 'ready') {
    dropClient(client);
    return;
  }
  let timer: NodeJS.Timeout | undefined;
  try {
    const quit = client.quit().then(() => true);
    const late = new Promise<false>((resolve) => (timer = setTimeout(resolve, Math.max(0, withinMs), false)));
    // Dropped: the QUIT then fails, which the race has already taken as its handled answer.
    if (!(await Promise.race([quit, late]))) dropClient(client);
  } catch {
    dropClient(client);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Drops a connection at once (a blocked command is abandoned). Only once: a second disconnect()
 * on a closed ioredis stream leaves a 2 s timer behind that holds the process open.
 */
export function dropClient(client: RedisClient): void {
  if (client.status !== 'end') client.disconnect();
}

/** A connection's drop count: read it before and after a call to know whether one fell inside it. */
export interface DropCounter {
  readonly drops: number;
}

const dropCounters = new WeakMap<RedisClient, { drops: number }>();

/**
 * The drop counter of a connection: one 'close' listener per connection however many workers
 * share it (one per worker passed Node's listener limit at the eleventh, in a Nest app's shared
 * connection). On an ioredis Cluster, 'close' is the whole cluster connection's; a single node's
 * reconnect is not counted.
 */
export function dropCounter(client: RedisClient): DropCounter {
  let counter = dropCounters.get(client);
  if (!counter) {
    const created = { drops: 0 };
    client.on('close', () => void created.drops++);
    dropCounters.set(client, (counter = created));
  }
  return counter;
}
