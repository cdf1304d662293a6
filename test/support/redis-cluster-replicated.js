// A private Redis Cluster with one replica per master (three masters, three replicas) for the
// failover and migration tests: free ports, one temp dir, no persistence, a short
// cluster-node-timeout (1000 ms) so a replica takes over about two seconds after its master dies.
// The machine's shared Redis on 6379 is never touched.
import { execFile, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { freeClusterPort } from './redis-process.js';

const run = promisify(execFile);
const NODE_TIMEOUT_MS = 1000;

async function waitFor(check, what, timeoutMs = 20000) {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (await check().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/**
 * Why a cluster cannot be started here ('' when it can): no redis-cli or redis-server on PATH,
 * or a redis-server too old for `redis-cli --cluster create` (Redis 5+).
 */
export function clusterUnsupported() {
  for (const tool of ['redis-server', 'redis-cli']) {
    const probe = spawnSync(tool, ['--version'], { encoding: 'utf8' });
    if (probe.error || probe.status !== 0) return `${tool} is not on PATH`;
  }
  const version = spawnSync('redis-server', ['--version'], { encoding: 'utf8' }).stdout;
  const major = Number(/v=(\d+)/.exec(version)?.[1] ?? 0);
  if (major < 5) return `redis-server ${major} has no redis-cli --cluster (Redis 5+)`;
  return '';
}

/**
 * startReplicatedCluster({ masters = 3 }) → a cluster of `masters` masters with one replica each,
 * resolved once every node says cluster_state:ok and every replica's link is up and in sync:
 *   nodes            every node's { host, port } (startup nodes for an ioredis Cluster)
 *   nodeTimeoutMs    cluster-node-timeout: no replica is promoted sooner after its master dies
 *   admin(port)      a plain Redis on one node (admin commands; closed by stop())
 *   masterOf(slot)   the port of the node serving `slot`, as the live nodes see it
 *   nodeId(port)     CLUSTER MYID of a node
 *   kill(port)       kill -9 of that node's process
 *   signal(port, sig) SIGSTOP / SIGCONT of a node; replicaOf(masterPort) the port of its replica
 *   waitForFailover(slot, deadPort) → { port, ms }: the slot's new master once every live node says
 *                    cluster_state:ok and the slot is served by another node than `deadPort`
 *   stop()           stops every node and removes the dir
 */
export async function startReplicatedCluster({ masters = 3 } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'echomq-cluster-rep-'));
  const ports = [];
  while (ports.length < masters * 2) ports.push(await freeClusterPort(ports));
  const children = new Map();
  for (const port of ports) {
    const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir,
      '--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${port}.conf`,
      '--cluster-node-timeout', String(NODE_TIMEOUT_MS), '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    child.unref();
    child.exited = new Promise((resolve) => child.once('exit', resolve));
    children.set(port, child);
  }
  const admins = new Map();
  const admin = (port) => {
    let client = admins.get(port);
    // A client that gave up ('end': its node was not listening yet, or was killed) is replaced:
    // without retries it never connects again, and the waits below would time out on it.
    if (!client || client.status === 'end') {
      // No retries: a dead node answers with an error at once instead of holding the caller.
      client = new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: 0, retryStrategy: () => null, lazyConnect: false });
      client.on('error', () => undefined);
      admins.set(port, client);
    }
    return client;
  };
  const alive = () => ports.filter((port) => { const c = children.get(port); return c.exitCode === null && c.signalCode === null; });
  const stop = async () => {
    for (const client of admins.values()) client.disconnect();
    await Promise.all([...children.values()].map(async (child) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.ref(); // waited for: an unreferenced child lets Node exit with code 0 during the await (redis-process.js)
      child.kill('SIGKILL');
      await child.exited;
    }));
    rmSync(dir, { recursive: true, force: true });
  };
  const masterOf = async (slot) => {
    for (const port of alive()) {
      try {
        const slots = await admin(port).cluster('SLOTS');
        const range = slots.find(([from, to]) => slot >= from && slot <= to);
        if (range) return range[2][1];
      } catch { /* a node just killed or not up: ask the next */ }
    }
    throw new Error(`no live node serves slot ${slot}`);
  };
  const nodeId = (port) => admin(port).cluster('MYID');
  const kill = async (port) => {
    const child = children.get(port);
    child.kill('SIGKILL');
    await child.exited;
    admins.get(port)?.disconnect();
    admins.delete(port);
  };
  /** SIGSTOP / SIGCONT a node (a replica left behind its master, without a kill). */
  const signal = (port, sig) => { children.get(port).kill(sig); };
  /** The port of `masterPort`'s replica, as the master's INFO replication says. */
  const replicaOf = async (masterPort) => Number(/slave0:ip=[^,]*,port=(\d+)/.exec(await admin(masterPort).info('replication'))?.[1]);
  const waitForFailover = async (slot, deadPort, timeoutMs = 20000) => {
    const started = Date.now();
    let port = deadPort;
    await waitFor(async () => {
      for (const p of alive()) if (!(await admin(p).cluster('INFO')).includes('cluster_state:ok')) return false;
      port = await masterOf(slot);
      return port !== deadPort;
    }, `failover of slot ${slot} away from ${deadPort}`, timeoutMs);
    return { port, ms: Date.now() - started };
  };
  try {
    for (const port of ports) await waitFor(async () => (await admin(port).ping()) === 'PONG', `redis-server on port ${port}`);
    // redis-cli makes the first `masters` ports masters and gives each a replica from the rest.
    await run('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '1', '--cluster-yes']);
    for (const port of ports) {
      await waitFor(async () => (await admin(port).cluster('INFO')).includes('cluster_state:ok'), `cluster_state:ok on port ${port}`);
    }
    // In sync: every replica's link up, its initial sync done, and every master sees its replica online.
    await waitFor(async () => {
      let replicas = 0;
      for (const port of ports) {
        const info = await admin(port).info('replication');
        if (info.includes('role:slave')) {
          if (!info.includes('master_link_status:up') || info.includes('master_sync_in_progress:1')) return false;
          replicas += 1;
        } else if (!/slave0:.*state=online/.test(info)) return false;
      }
      return replicas === masters;
    }, 'replicas in sync');
  } catch (error) {
    await stop();
    throw error;
  }
  const nodes = ports.map((port) => ({ host: '127.0.0.1', port }));
  return { ports, nodes, nodeTimeoutMs: NODE_TIMEOUT_MS, admin, masterOf, nodeId, kill, signal, replicaOf, waitForFailover, alive, stop };
}
