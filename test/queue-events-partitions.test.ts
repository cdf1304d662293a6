import { afterEach, describe, expect, it } from '@jest/globals';
import { Cluster, Redis } from 'ioredis';
import { EchoMQOptionError, Queue, QueueEvents, Worker, type QueueEvent } from '../lib/index.js';
import { partitionOf } from '../lib/protocol/partitions.js';
import { clusterNodes, eventually, masters, newClient, onCluster, redisUrl, sleep, testConnection, uniqueQueueName } from './support/redis.js';

// A QueueEvents of a partitioned queue reads every partition's stream and emits one queue's events.

const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (closers.length) await closers.pop()!();
});

function queue(name: string, partitions: number, connection: Redis | Cluster | string = testConnection()) {
  const q = new Queue(name, { connection, partitions });
  closers.push(async () => {
    await q.obliterate({ force: true });
    await q.close();
  });
  return q;
}

function worker(name: string, partitions: number, handler: (job: any) => unknown) {
  const w = new Worker(name, async (job) => handler(job), { connection: testConnection(), partitions, concurrency: 4 });
  closers.push(() => w.close());
  return w;
}

function queueEvents(name: string, partitions: number, opts: Record<string, unknown> = {}) {
  const events = new QueueEvents(name, { connection: testConnection(), partitions, ...opts });
  closers.push(() => events.close());
  return events;
}

const partitionOfId = (jobId: string) => Number(jobId.split('-')[0]);

describe('QueueEvents of a partitioned queue', () => {
  it('emits the events of every partition as the one queue\'s, each with its partition', async () => {
    const name = uniqueQueueName('qep');
    const q = queue(name, 4);
    const events = queueEvents(name, 4);
    const entries: QueueEvent[] = [];
    events.event$('completed').subscribe((entry) => entries.push(entry));
    const heard: Array<{ jobId: string; returnvalue: unknown; partition?: number }> = [];
    events.on('completed', (args) => heard.push(args));
    await events.waitUntilReady();

    worker(name, 4, (job) => ({ doubled: job.data.n * 2 }));
    const jobs = await Promise.all(Array.from({ length: 8 }, (_, n) => q.add('double', { n })));
    expect(new Set(jobs.map((job) => partitionOfId(job.id))).size).toBe(4); // round-robin: two jobs in each

    await eventually(() => heard.length === 8, 10_000, 'a completed event for every job');
    expect(new Set(heard.map((args) => args.partition)).size).toBe(4);
    for (const job of jobs) {
      const args = heard.find((a) => a.jobId === job.id)!;
      expect(args).toEqual({ jobId: job.id, returnvalue: { doubled: (job.data as { n: number }).n * 2 }, partition: partitionOfId(job.id) });
    }
    expect(entries).toHaveLength(8);
    for (const entry of entries) {
      expect(entry.queue).toBe(name); // the logical name, not the partition's `name#i`
      expect(entry.partition).toBe(partitionOfId(entry.jobId));
    }
  });

  it('starts at every stream\'s end: nothing written before it was ready is replayed', async () => {
    const name = uniqueQueueName('qep');
    const q = queue(name, 3);
    const before = await Promise.all([0, 1, 2].map(() => q.add('before', {})));
    expect(new Set(before.map((job) => partitionOfId(job.id))).size).toBe(3);
    const events = queueEvents(name, 3);
    const waiting: string[] = [];
    events.on('waiting', ({ jobId }) => waiting.push(jobId));
    await events.waitUntilReady();
    const after = await Promise.all([0, 1, 2].map(() => q.add('after', {})));
    await eventually(() => waiting.length === 3, 10_000, 'the waiting events of the later adds');
    await q.add('last', {}, { partitionKey: 'k' }); // one more: an earlier entry would have come before it
    await eventually(() => waiting.length === 4, 10_000, 'the last waiting event');
    expect(waiting.slice(0, 3).sort()).toEqual(after.map((job) => job.id).sort());
  });

  it('reads nothing of a plain queue of the same name, and a plain QueueEvents nothing of the partitions', async () => {
    const name = uniqueQueueName('qep');
    const partitioned = queue(name, 2);
    const plain = queue(name, 1);
    const ofPartitions = queueEvents(name, 2);
    const ofPlain = queueEvents(name, 1);
    const seen = { partitions: [] as string[], plain: [] as string[] };
    ofPartitions.on('waiting', ({ jobId }) => seen.partitions.push(jobId));
    ofPlain.on('waiting', ({ jobId }) => seen.plain.push(jobId));
    await Promise.all([ofPartitions.waitUntilReady(), ofPlain.waitUntilReady()]);
    const a = await partitioned.add('a', {});
    const b = await plain.add('b', {});
    await eventually(() => seen.partitions.length === 1 && seen.plain.length === 1, 10_000, 'one waiting event each');
    expect(seen).toEqual({ partitions: [a.id], plain: [b.id] });
    expect(() => ofPartitions.keys).toThrow(/partitionKeys/);
    expect(ofPartitions.partitionKeys.map((keys) => keys.events)).toEqual([`emq:{${name}#0}:events`, `emq:{${name}#1}:events`]);
    expect(ofPlain.keys.events).toBe(`emq:{${name}}:events`);
  });

  it('refuses a bad partition count or name before it connects', () => {
    expect(() => new QueueEvents(uniqueQueueName('qep'), { connection: testConnection(), partitions: 0 })).toThrow(EchoMQOptionError);
    expect(() => new QueueEvents(uniqueQueueName('qep'), { connection: testConnection(), partitions: 1.5 })).toThrow(/partitions/);
    expect(() => new QueueEvents('a#b', { connection: testConnection(), partitions: 2 })).toThrow(/"#"/);
  });
});

describe('QueueEvents of a partitioned queue: connections', () => {
  it('reads on one connection on one server, one per partition on a Cluster; close() leaves none behind', async () => {
    const tag = uniqueQueueName('qep-conn');
    const connection = namedConnection(tag);
    const admin = newClient();
    const servers = await masters(admin); // CLIENT LIST sees one node: ask each master
    try {
      const name = uniqueQueueName('qep');
      const q = queue(name, 8, connection);
      const events = new QueueEvents(name, { connection, partitions: 8 });
      closers.push(() => events.close());
      const completed = new Set<number>();
      events.on('completed', ({ partition }) => completed.add(partition!));
      await events.waitUntilReady();
      expect(events.connectionCount).toBe(onCluster ? 8 : 1);
      // One server: one socket. A Cluster: each partition's connection has a socket to its partition's
      // node (blocked in XREAD), and maybe one more to the node ioredis asked CLUSTER INFO at connect.
      const least = events.connectionCount;
      const most = onCluster ? 2 * events.connectionCount : 1;
      const open = await eventually(async () => {
        const count = await namedCount(servers, `${tag}:events`);
        return count >= least ? count : 0;
      }, 5000, 'every reader connected');
      expect(open).toBeLessThanOrEqual(most);

      worker(name, 8, () => 'ok');
      await Promise.all(Array.from({ length: 8 }, () => q.add('x', {})));
      await eventually(() => completed.size === 8, 10_000, 'completed events from all 8 partitions');

      await events.close();
      await eventually(async () => (await namedCount(servers, `${tag}:events`)) === 0, 5000, 'no events connection left');
    } finally {
      while (closers.length) await closers.pop()!();
      connection.disconnect(); // the caller's instance: EchoMQ leaves it open
      await admin.quit();
    }
  });

  it('rejects waitUntilReady while one partition cannot be read, starts on a later call once it can', async () => {
    const name = uniqueQueueName('qep');
    const admin = newClient();
    const servers = await masters(admin); // ACL SETUSER reaches one node: set the user on each master
    const user = uniqueQueueName('qep-user');
    // Every partition's keys but partition 1's.
    const allowed = [0, 2].map((i) => `~emq:{${name}#${i}}:*`);
    for (const server of servers) await server.call('ACL', 'SETUSER', user, 'on', '>pw', '&*', '+@all', ...allowed);
    const connection = connectionAs(user, 'pw');
    const events = new QueueEvents(name, { connection, partitions: 3, autorun: false });
    try {
      await expect(events.waitUntilReady()).rejects.toThrow(/NOPERM/);
      for (const server of servers) await server.call('ACL', 'SETUSER', user, `~emq:{${name}#1}:*`);
      await events.waitUntilReady();
      const q = queue(name, 3);
      const waiting = new Set<number>();
      events.on('waiting', ({ partition }) => waiting.add(partition!));
      await Promise.all([0, 1, 2].map(() => q.add('x', {})));
      await eventually(() => waiting.size === 3, 10_000, 'waiting events from the 3 partitions');
    } finally {
      await events.close();
      connection.disconnect(); // the caller's instance: EchoMQ leaves it open
      for (const server of servers) await server.call('ACL', 'DELUSER', user);
      await admin.quit();
    }
  });

  it('reports a read failure once per outage of each connection, and reads again once Redis lets it', async () => {
    const name = uniqueQueueName('qep');
    const admin = newClient();
    const servers = await masters(admin);
    const user = uniqueQueueName('qep-user');
    for (const server of servers) await server.call('ACL', 'SETUSER', user, 'on', '>pw', '~*', '&*', '+@all');
    const connection = connectionAs(user, 'pw');
    const events = new QueueEvents(name, { connection, partitions: 4, blockingTimeout: 50 });
    const errors: Error[] = [];
    events.on('error', (error) => errors.push(error));
    try {
      await events.waitUntilReady();
      for (const server of servers) await server.call('ACL', 'SETUSER', user, '-xread');
      await eventually(() => errors.length >= events.connectionCount, 5000, 'a read failure on every connection');
      await sleep(1000); // some ten retries of each connection (every 100 ms): none reported again
      expect(errors).toHaveLength(events.connectionCount);
      expect(errors[0].message).toMatch(/could not read .*\(retrying\).*NOPERM/);
      if (onCluster) expect(new Set(errors.map((e) => /partition (\d+)/.exec(e.message)?.[1])).size).toBe(4);

      for (const server of servers) await server.call('ACL', 'SETUSER', user, '+xread');
      const q = queue(name, 4);
      const waiting = new Set<number>();
      events.on('waiting', ({ partition }) => waiting.add(partition!));
      await Promise.all([0, 1, 2, 3].map(() => q.add('x', {})));
      await eventually(() => waiting.size === 4, 10_000, 'waiting events from the 4 partitions after the outage');
      expect(errors).toHaveLength(events.connectionCount);
    } finally {
      await events.close();
      connection.disconnect(); // the caller's instance: EchoMQ leaves it open
      for (const server of servers) await server.call('ACL', 'DELUSER', user);
      await admin.quit();
    }
  });
});

describe('waitUntilFinished with a partitioned QueueEvents', () => {
  it('settles for jobs of every partition', async () => {
    const name = uniqueQueueName('qep');
    const q = queue(name, 4);
    const events = queueEvents(name, 4);
    worker(name, 4, (job) => {
      if (job.data.fail) throw new Error(`job ${job.id} broke`);
      return job.data.n + 1;
    });
    const jobs = await Promise.all(Array.from({ length: 4 }, (_, n) => q.add('inc', { n })));
    expect(await Promise.all(jobs.map((job) => job.waitUntilFinished(events, 10_000)))).toEqual([1, 2, 3, 4]);
    const bad = await q.add('bad', { fail: true }, { partitionKey: 'p' });
    await expect(bad.waitUntilFinished(events, 10_000)).rejects.toThrow(`job ${bad.id} broke`);
  });

  it('keeps apart two jobs of one custom id in two partitions', async () => {
    const name = uniqueQueueName('qep');
    const q = queue(name, 4);
    const events = queueEvents(name, 4);
    const [keyA, keyB] = twoKeysInTwoPartitions(4);
    let releaseA!: () => void;
    const heldA = new Promise<void>((resolve) => (releaseA = resolve));
    worker(name, 4, async (job) => {
      if (job.data.who === 'A') await heldA;
      return job.data.who;
    });
    await events.waitUntilReady();
    const a = await q.add('x', { who: 'A' }, { jobId: 'same', partitionKey: keyA });
    const waitA = a.waitUntilFinished(events, 10_000);
    const b = await q.add('x', { who: 'B' }, { jobId: 'same', partitionKey: keyB });
    expect(b.data).toEqual({ who: 'B' }); // a job of its own, in the other partition
    // B's completed event (jobId "same") comes while A still waits: it must not settle A's wait.
    expect(await b.waitUntilFinished(events, 10_000)).toBe('B');
    releaseA();
    expect(await waitA).toBe('A');
  });

  it('refuses a QueueEvents that does not read the job\'s partition', async () => {
    const name = uniqueQueueName('qep');
    const q = queue(name, 4);
    const jobs = await Promise.all([0, 1, 2, 3].map(() => q.add('x', {})));
    const job = jobs.find((j) => partitionOfId(j.id) === 3)!;
    // The plain queue of that name, partitions 0 and 1 only, another queue: none reads partition 3's stream.
    for (const other of [queueEvents(name, 1), queueEvents(name, 2), queueEvents(uniqueQueueName('other'), 4)]) {
      await expect(job.waitUntilFinished(other, 1000)).rejects.toThrow(EchoMQOptionError);
    }
    // A plain QueueEvents of the partition's own queue name reads that stream: accepted.
    const partitionOnly = queueEvents(`${name}#${partitionOfId(job.id)}`, 1);
    worker(name, 4, () => 'done');
    expect(await job.waitUntilFinished(partitionOnly, 10_000)).toBe('done');
  });
});

/** Two partitionKeys that route to different partitions of a queue of `partitions`. */
function twoKeysInTwoPartitions(partitions: number): [string, string] {
  const keys = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];
  const second = keys.find((key) => partitionOf(key, partitions) !== partitionOf(keys[0], partitions))!;
  return [keys[0], second];
}

/** How many clients named `name` every server lists. */
async function namedCount(servers: Redis[], name: string): Promise<number> {
  let count = 0;
  for (const server of servers) {
    const list = (await server.client('LIST')) as string;
    count += list.split('\n').filter((line) => line.includes(` name=${name} `)).length;
  }
  return count;
}

/** A connection named `name`, to the test Redis: a Redis, or in the cluster run a Cluster. */
function namedConnection(name: string): Redis | Cluster {
  const options = { connectionName: name, maxRetriesPerRequest: null };
  return onCluster ? new Cluster(clusterNodes(), { redisOptions: options }) : new Redis(redisUrl(), options);
}

/** The test Redis as an ACL user: a Redis, or in the cluster run a Cluster whose nodes log in as the user. */
function connectionAs(username: string, password: string): Redis | Cluster {
  const options = { username, password, maxRetriesPerRequest: null };
  return onCluster ? new Cluster(clusterNodes(), { redisOptions: options }) : new Redis(redisUrl(), options);
}
