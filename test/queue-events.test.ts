import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { Cluster } from 'ioredis';
import { EchoMQOptionError, Queue, QueueEvents, Worker, type ConnectionInput } from '../lib/index.js';
import { clusterNodes, masters, newClient, onCluster, redisUrl, sleep, testConnection, uniqueQueueName } from './support/redis.js';

// QueueEvents: what it promises about its own promises, its listeners and its options.

/** Every rejection nobody observed while a test ran: a Node process under default settings ends at the first. */
let unobserved: unknown[] = [];
const record = (reason: unknown) => unobserved.push(reason);
beforeEach(() => {
  unobserved = [];
  process.on('unhandledRejection', record);
});
afterEach(() => {
  process.off('unhandledRejection', record);
});

/** Gives a rejection left behind the turns it needs to be reported as unhandled. */
const settle = () => sleep(300);

describe('constructors leave no promise that can reject unobserved', () => {
  it('QueueEvents closed at once', async () => {
    const events = new QueueEvents(uniqueQueueName('ev'), { connection: testConnection() });
    await events.close();
    await settle();
    expect(unobserved).toEqual([]);
  });

  it('QueueEvents closed at once says so through waitUntilReady', async () => {
    const events = new QueueEvents(uniqueQueueName('ev'), { connection: testConnection() });
    await events.close();
    await expect(events.waitUntilReady()).rejects.toThrow(/closed/);
    await settle();
    expect(unobserved).toEqual([]);
  });

  it('Queue and Worker closed at once', async () => {
    const name = uniqueQueueName('ev');
    const queue = new Queue(name, { connection: testConnection() });
    const worker = new Worker(name, async () => null, { connection: testConnection() });
    await Promise.all([queue.close(), worker.close()]);
    await settle();
    expect(unobserved).toEqual([]);
  });
});

describe('QueueEvents as an EventEmitter', () => {
  let queue: Queue;
  let worker: Worker | undefined;
  let events: QueueEvents;
  afterEach(async () => {
    await worker?.close();
    await events.close();
    await queue.close();
    worker = undefined;
  });

  it('calls on(name, listener) with BullMQ\'s arguments: (fields, stream id)', async () => {
    const name = uniqueQueueName('ev');
    queue = new Queue(name, { connection: testConnection() });
    events = new QueueEvents(name, { connection: testConnection() });
    const seen: Array<[string, unknown, string]> = [];
    for (const event of ['waiting', 'active', 'progress', 'completed', 'failed', 'delayed'] as const) {
      events.on(event, (args: unknown, id: string) => seen.push([event, args, id]));
    }
    const drained: string[] = [];
    events.on('drained', (id) => drained.push(id));
    const cleaned: Array<{ count: number }> = [];
    events.on('cleaned', (args) => cleaned.push(args));
    await events.waitUntilReady();

    worker = new Worker(name, async (job) => {
      await job.updateProgress({ half: true });
      if (job.name === 'bad') throw new Error('it broke');
      return { ok: 1 };
    }, { connection: testConnection() });
    const good = await queue.add('good', {});
    const due = Date.now() + 60_000;
    const later = await queue.add('later', {}, { delay: 60_000 });
    await waitFor(() => seen.some(([event, args]) => event === 'completed' && (args as { jobId: string }).jobId === good.id));
    const bad = await queue.add('bad', {});
    await waitFor(() => seen.some(([event]) => event === 'failed'));
    await queue.drain(true);
    await queue.clean(0, 0, 'completed');
    await waitFor(() => cleaned.length === 1 && drained.length > 0);

    const of = (jobId: string) => seen.filter(([, args]) => (args as { jobId: string }).jobId === jobId);
    expect(of(good.id).map(([event]) => event)).toEqual(['waiting', 'active', 'progress', 'completed']);
    expect(of(good.id)[2][1]).toEqual({ jobId: good.id, data: { half: true } });
    expect(of(good.id)[3][1]).toEqual({ jobId: good.id, returnvalue: { ok: 1 } });
    expect(of(bad.id).at(-1)![1]).toEqual({ jobId: bad.id, failedReason: 'it broke' });
    const delayed = of(later.id)[0];
    expect(delayed[0]).toBe('delayed');
    expect((delayed[1] as { delay: number }).delay).toBeGreaterThanOrEqual(due - 1000);
    expect(typeof (delayed[1] as { delay: number }).delay).toBe('number');
    for (const [, , id] of seen) expect(id).toMatch(/^\d+-\d+$/);
    expect(drained[0]).toMatch(/^\d+-\d+$/);
    expect(cleaned).toEqual([{ count: 1 }]);
  });

  it('keeps the RxJS face as events$ and event$(name)', async () => {
    const name = uniqueQueueName('ev');
    queue = new Queue(name, { connection: testConnection() });
    events = new QueueEvents(name, { connection: testConnection() });
    const waiting: string[] = [];
    const all: string[] = [];
    events.event$('waiting').subscribe((entry) => waiting.push(entry.jobId));
    events.events$.subscribe((entry) => all.push(entry.event));
    await events.waitUntilReady();
    const job = await queue.add('x', {});
    await queue.pause();
    await waitFor(() => all.includes('paused'));
    expect(waiting).toEqual([job.id]);
    expect(all).toEqual(['waiting', 'paused']);
  });

  it('reports a listener that throws on `error` and goes on reading', async () => {
    const name = uniqueQueueName('ev');
    queue = new Queue(name, { connection: testConnection() });
    events = new QueueEvents(name, { connection: testConnection() });
    const errors: Error[] = [];
    const waiting: string[] = [];
    events.on('error', (error) => errors.push(error));
    events.on('waiting', ({ jobId }) => {
      waiting.push(jobId);
      if (waiting.length === 1) throw new Error('listener bug');
    });
    await events.waitUntilReady();
    await queue.add('a', {});
    await queue.add('b', {});
    await waitFor(() => waiting.length === 2);
    expect(errors.map((e) => e.message)).toEqual(['listener bug']);
    await settle();
    expect(unobserved).toEqual([]);
  });
});

describe('QueueEvents errors', () => {
  it('a start that fails rejects waitUntilReady and goes to `error`, nothing unobserved', async () => {
    const admin = newClient();
    const servers = await masters(admin); // ACL SETUSER reaches one node: set the user on each master
    const user = uniqueQueueName('no-xrevrange');
    for (const server of servers) await server.call('ACL', 'SETUSER', user, 'on', '>pw', '~*', '&*', '+@all', '-xrevrange');
    const connection = connectionAs(user, 'pw');
    try {
      const events = new QueueEvents(uniqueQueueName('ev'), { connection });
      const errors: Error[] = [];
      events.on('error', (error) => errors.push(error));
      await expect(events.waitUntilReady()).rejects.toThrow(/NOPERM/);
      await waitFor(() => errors.length > 0);
      expect(errors[0].message).toMatch(/NOPERM/);
      await events.close();
      await settle();
      expect(unobserved).toEqual([]);
    } finally {
      if (connection instanceof Cluster) connection.disconnect(); // the caller's instance: EchoMQ leaves it open
      for (const server of servers) await server.call('ACL', 'DELUSER', user);
      await admin.quit();
    }
  });

  it('checks its prefix and blockingTimeout as Queue and Worker do, before it connects', async () => {
    const created: QueueEvents[] = [];
    const construct = (opts: object) => () => created.push(new QueueEvents(uniqueQueueName('ev'), { connection: testConnection(), ...opts }));
    try {
      expect(construct({ prefix: 'a{b}' })).toThrow(EchoMQOptionError);
      expect(construct({ prefix: '' })).toThrow(/prefix/);
      expect(construct({ blockingTimeout: -1 })).toThrow(/blockingTimeout/);
    } finally {
      await Promise.all(created.map((events) => events.close()));
    }
  });
});

async function waitFor(check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > until) throw new Error('timed out');
    await sleep(20);
  }
}

/** The test Redis as an ACL user: a URL, or in the cluster run a Cluster whose nodes log in as the user. */
function connectionAs(username: string, password: string): ConnectionInput {
  if (onCluster) return new Cluster(clusterNodes(), { redisOptions: { username, password } });
  const url = new URL(redisUrl());
  url.username = username;
  url.password = password;
  return url.toString();
}
