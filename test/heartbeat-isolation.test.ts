import { describe, expect, it } from '@jest/globals';
import { Cluster, Redis } from 'ioredis';
import { LockManager, Queue, Worker } from '../lib/index.js';
import { connectRenewal } from '../lib/runtime/core/connection.js';
import { withinMs } from '../lib/runtime/core/within-ms.js';
import { clusterNodes, eventually, masters, newClient, onCluster, redisUrl, uniqueQueueName } from './support/redis.js';
import { monitorCommands } from './support/monitor.js';

/** The addr= of every client named `name` in CLIENT LIST, of every server (each master of a Cluster). */
async function addrsNamed(servers: Redis[], name: string): Promise<string[]> {
  const addrs: string[] = [];
  for (const server of servers) {
    const list = (await server.client('LIST')) as string;
    addrs.push(...list.split('\n').filter((line) => line.includes(` name=${name} `)).map((line) => /addr=(\S+)/.exec(line)![1]));
  }
  return addrs;
}

/** A connection named `name`, to the test Redis: a Redis, or in the cluster run a Cluster (a socket per node). */
function namedConnection(name: string): Redis | Cluster {
  const options = { connectionName: name, maxRetriesPerRequest: null };
  return onCluster ? new Cluster(clusterNodes(), { redisOptions: options }) : new Redis(redisUrl(), options);
}

// In Nest every queue and worker of a configuration shares one connection; a renewal sent there
// waits behind any addBulk pipeline or batch of finishes. The renewals go on a connection of the
// LockManager's own, one per shared connection, whatever the number of workers on it.
describe('heartbeat isolation', () => {
  it('renewals go on a renewal connection, not the shared one: one per LockManager and shared connection, gone when its workers leave', async () => {
    const tag = uniqueQueueName('iso');
    const shared = namedConnection(tag);
    const admin = newClient();
    const servers = await masters(admin); // MONITOR and CLIENT LIST see one node: ask each master
    const [a, b] = [uniqueQueueName('iso-a'), uniqueQueueName('iso-b')];
    const queues = [new Queue(a, { connection: shared }), new Queue(b, { connection: shared })];
    const stalledKeys = new Set(queues.map((queue) => queue.keys.stalled));
    const renewalSources: string[] = [];
    // Raw MONITOR sockets of their own (test/support/monitor.ts: ioredis's monitor() mixed MONITOR's
    // lines into its reply queue, "Command queue state error", seen failing this test once).
    const stopMonitors = await Promise.all(servers.map(({ options: { host = '127.0.0.1', port = 6379 } }) => monitorCommands(host, port, (args, source) => {
      // extendLocks-1: EVALSHA <sha> 1 <stalled key> <job-key prefix> <duration> ...
      if (args[0]?.toLowerCase() === 'evalsha' && args[2] === '1' && stalledKeys.has(args[3]) && args.length > 6) renewalSources.push(source);
    })));
    const lockManager = new LockManager();
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const opts = { connection: shared, lockManager, lockDuration: 2000, lockRenewTime: 200, stalledInterval: 600_000 };
    const workers = [a, b].map((name) => new Worker(name, () => released, opts));
    try {
      await Promise.all(queues.map((queue) => queue.add('held', {})));
      await eventually(() => workers.every((worker) => worker.runningCount === 1), 5000, 'both jobs running');
      await eventually(() => renewalSources.length >= 4, 5000, 'renewals seen by MONITOR');

      const sharedAddrs = await addrsNamed(servers, tag);
      const heartbeatAddrs = await addrsNamed(servers, `${tag}:heartbeat`);
      expect(sharedAddrs.length).toBeGreaterThan(0);
      // Two workers, one LockManager, one shared connection: one renewal connection (a Cluster's
      // has at most one socket per node).
      expect(heartbeatAddrs.length).toBeGreaterThan(0);
      expect(heartbeatAddrs.length).toBeLessThanOrEqual(servers.length);
      expect(lockManager.renewalConnectionCount).toBe(1);
      for (const source of renewalSources) expect(heartbeatAddrs).toContain(source);
      for (const addr of sharedAddrs) expect(renewalSources).not.toContain(addr);
    } finally {
      release();
      await Promise.all(workers.map((worker) => worker.close()));
    }
    expect(lockManager.renewalConnectionCount).toBe(0);
    await eventually(async () => (await addrsNamed(servers, `${tag}:heartbeat`)).length === 0, 5000, 'the renewal connection closed');
    await lockManager.close();
    await Promise.all(queues.map((queue) => queue.close()));
    for (const stop of stopMonitors) stop();
    await shared.quit();
    await admin.quit();
  });
});

describe('the renewal connection of a Cluster', () => {
  it('is a Cluster duplicate with the same options, named <name>:heartbeat', async () => {
    // lazyConnect: neither connects, so any address does.
    const cluster = new Cluster([{ host: '127.0.0.1', port: 1 }], { lazyConnect: true, redisOptions: { connectionName: 'app' } });
    const renewal = connectRenewal(cluster);
    try {
      expect(renewal).toBeInstanceOf(Cluster);
      expect(renewal).not.toBe(cluster);
      expect((renewal as Cluster).options.redisOptions?.connectionName).toBe('app:heartbeat');
      expect((renewal as Cluster).options.lazyConnect).toBe(true);
    } finally {
      renewal.disconnect();
      cluster.disconnect();
    }
  });
});

// A tick waits for its replies at most lockRenewTime. In a process whose event loop a big
// synchronous task held past that bound, the replies wait on the socket while the bound's timer is
// due, and Node runs due timers before it reads sockets: the tick took a reply that came in time for
// silence, reported a heartbeatError, and after lockDuration of such ticks dropped a job it still held.
describe('the bound on a tick after a blocked event loop', () => {
  it('reads a reply that came in time instead of taking it for silence; still gives up on real silence', async () => {
    const client = newClient();
    try {
      // One plain connection to one server: a Cluster client may hold a command back a turn (it
      // routes first), and then the PING is not even sent before the loop blocks, which is not the
      // case under test (a reply that came in time).
      const [server] = await masters(client);
      await server.ping();
      const answer = withinMs(server.ping(), 50);
      const until = Date.now() + 200;
      while (Date.now() < until); // the PING's reply arrives and waits on the socket
      expect(await answer).toBe('PONG');
      expect(await withinMs(new Promise(() => undefined), 50)).toBeUndefined();
    } finally {
      client.disconnect();
    }
  });
});
