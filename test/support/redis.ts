import { describe, it } from '@jest/globals';
import { Cluster, Redis } from 'ioredis';
import { randomBytes } from 'node:crypto';

/** True in the cluster run (`npm run test:cluster`): the tests' Redis is a three-master Cluster. */
export const onCluster = process.env.ECHOMQ_TEST_CLUSTER === '1';

/**
 * `it` for a test that cannot run on a Cluster (its own redis-server, SIGSTOP, INFO or CONFIG of one
 * node, MONITOR...): skipped in the cluster run. Every use says why in a comment beside it.
 */
export const singleNodeIt: typeof it.skip = onCluster ? it.skip : it;

/** `describe` for a block of tests that cannot run on a Cluster, as singleNodeIt. */
export const singleNodeDescribe: typeof describe.skip = onCluster ? describe.skip : describe;

/** The Redis the tests use: the run's private server, or REDIS_URL. Not in the cluster run. */
export function redisUrl(): string {
  if (onCluster) throw new Error('redisUrl() on the cluster run: use testConnection() or newClient(), or mark the test singleNodeIt');
  const url = process.env.REDIS_URL;
  if (!url) throw new Error('REDIS_URL is not set: the jest global setup starts a redis-server');
  return url;
}

/** The cluster run's masters, as the jest global setup started them. */
export function clusterNodes(): Array<{ host: string; port: number }> {
  const nodes = process.env.ECHOMQ_TEST_CLUSTER_NODES;
  if (!nodes) throw new Error('ECHOMQ_TEST_CLUSTER_NODES is not set: the jest global setup starts the cluster');
  return nodes.split(',').map((node) => {
    const [host, port] = node.split(':');
    return { host, port: Number(port) };
  });
}

/** Every Cluster the helpers handed out; closed after each test file (test/support/environment.js). */
const clusters = new Set<Cluster>();

function newCluster(): Cluster {
  const cluster = new Cluster(clusterNodes(), { redisOptions: { maxRetriesPerRequest: null } });
  clusters.add(cluster);
  return cluster;
}

/**
 * What a test passes as `connection`: the test Redis's URL (EchoMQ then owns its connections), or
 * in the cluster run a fresh ioredis Cluster (shared by what it is passed to, closed after the file).
 */
export function testConnection(): string | Cluster {
  return onCluster ? newCluster() : redisUrl();
}

/**
 * A fresh connection to the test Redis; close it with `.disconnect()` or `quit()` (in the cluster
 * run it is also closed after the file). Both kinds take the same commands; a keyless command
 * (INFO, SCAN) goes to one node of a Cluster.
 */
export function newClient(): Redis | Cluster {
  return onCluster ? newCluster() : new Redis(redisUrl(), { maxRetriesPerRequest: null });
}

/** Closes the Clusters the helpers handed out that are still open. */
export async function closeTestConnections(): Promise<void> {
  const open = [...clusters];
  clusters.clear();
  await Promise.all(open.map(async (cluster) => {
    if (cluster.status === 'end') return;
    await cluster.quit().catch(() => cluster.disconnect());
  }));
}

(globalThis as { __echomqCloseTestConnections?: () => Promise<void> }).__echomqCloseTestConnections = closeTestConnections;

/** A queue name no other test uses, so tests never see each other's keys. */
export function uniqueQueueName(label = 'q'): string {
  return `${label}-${randomBytes(4).toString('hex')}`;
}

/**
 * The servers behind a client: the client itself, or every master of a Cluster (for what goes to
 * one node only: SCAN, INFO, CONFIG, SCRIPT FLUSH).
 */
export async function masters(client: Redis | Cluster): Promise<Redis[]> {
  if (!(client instanceof Cluster)) return [client];
  if (client.status !== 'ready') await new Promise((resolve) => client.once('ready', resolve));
  return client.nodes('master');
}

/** Every key matching `pattern`, sorted; on a Cluster every master is scanned. */
export async function scanKeys(client: Redis | Cluster, pattern: string): Promise<string[]> {
  const keys: string[] = [];
  for (const node of await masters(client)) {
    let cursor = '0';
    do {
      const [next, found] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      keys.push(...found);
    } while (cursor !== '0');
  }
  return keys.sort();
}

/** Every key of one queue (by its hash tag), sorted: to compare Redis before and after. */
export async function queueKeys(client: Redis | Cluster, queueName: string, prefix = 'emq'): Promise<string[]> {
  return scanKeys(client, `${prefix}:{${queueName}}:*`);
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
