import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { freeClusterPort, startRedis, type RedisProcess } from './redis-process.js';
import { eventually } from './redis.js';

const run = promisify(execFile);

/** A private Redis Cluster whose masters started at different times. */
export interface StaggeredCluster {
  /** The masters, the oldest first: pid() for a signal (SIGSTOP freezes one). */
  servers: RedisProcess[];
  /** Startup nodes in that order: an ioredis Cluster lists its masters in this order. */
  nodes: Array<{ host: string; port: number }>;
  stop(): Promise<void>;
}

/** INFO server's uptime_in_seconds of the Redis on `port`. */
async function uptime(port: number): Promise<number> {
  const client = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0 });
  try {
    await client.connect();
    return Number(/uptime_in_seconds:(\d+)/.exec(await client.info('server'))?.[1]);
  } finally {
    client.disconnect();
  }
}

/**
 * Three masters, no replicas, each started once the one before has run for `apartSeconds` (so any
 * two uptimes read at one moment differ), then joined with `redis-cli --cluster create`. For what
 * needs masters that differ, or one to freeze; the shared Redis is never touched.
 */
export async function startStaggeredCluster(apartSeconds = 2): Promise<StaggeredCluster> {
  const servers: RedisProcess[] = [];
  const stop = async () => {
    for (const server of servers) {
      try {
        process.kill(server.pid(), 'SIGCONT'); // a stopped server would not hear SIGTERM
      } catch { /* it exited already */ }
    }
    await Promise.all(servers.map((server) => server.stop()));
  };
  try {
    for (let i = 0; i < 3; i++) {
      if (i > 0) await eventually(async () => (await uptime(servers[i - 1].port)) >= apartSeconds, 10_000, `master ${i - 1} up for ${apartSeconds} s`);
      const port = await freeClusterPort(servers.map((s) => s.port));
      servers.push(await startRedis({ port, args: ['--cluster-enabled', 'yes', '--cluster-node-timeout', '5000'] }));
    }
    const nodes = servers.map((s) => ({ host: '127.0.0.1', port: s.port }));
    await run('redis-cli', ['--cluster', 'create', ...nodes.map((n) => `${n.host}:${n.port}`), '--cluster-replicas', '0', '--cluster-yes']);
    for (const { port } of nodes) {
      await eventually(async () => {
        const client = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0 });
        try {
          await client.connect();
          return (await client.cluster('INFO')).includes('cluster_state:ok');
        } finally {
          client.disconnect();
        }
      }, 15_000, `cluster_state:ok on port ${port}`);
    }
    return { servers, nodes, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
