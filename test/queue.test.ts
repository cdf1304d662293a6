import { afterAll, afterEach, describe, expect, it } from '@jest/globals';
import { EchoMQError, EchoMQOptionError, Queue, type JobOptions } from '../lib/index.js';
import { newClient, queueKeys, testConnection, uniqueQueueName } from './support/redis.js';
import { snapshot } from './support/scripts.js';

const client = newClient();
const open: Queue[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((queue) => queue.close()));
});
afterAll(() => client.quit());

function newQueue(name = uniqueQueueName(), opts = {}): Queue {
  const queue = new Queue(name, { connection: testConnection(), ...opts });
  open.push(queue);
  return queue;
}

describe('Queue: adding and reading jobs', () => {
  it('add returns the job; getJob reads it back with its options and data', async () => {
    const queue = newQueue(undefined, { defaultJobOptions: { attempts: 3 } });
    const job = await queue.add('email', { to: 'a@b.c' }, { priority: 4 });
    expect(job.id).toBe('1');
    const stored = await queue.getJob(job.id);
    expect(stored?.name).toBe('email');
    expect(stored?.data).toEqual({ to: 'a@b.c' });
    expect(stored?.opts).toEqual({ attempts: 3, priority: 4 });
    expect(stored?.timestamp).toBe(job.timestamp);
    expect(await stored?.getState()).toBe('prioritized');
    expect(await queue.getJob('missing')).toBeUndefined();
  });

  it('a duplicate custom id returns the existing job and writes nothing', async () => {
    const queue = newQueue();
    const first = await queue.add('a', { v: 1 }, { jobId: 'order-42' });
    const before = await snapshot(client, queue.keys);
    const again = await queue.add('b', { v: 2 }, { jobId: 'order-42', delay: 1000 });
    expect(again.id).toBe('order-42');
    expect(again.name).toBe('a');
    expect(again.data).toEqual({ v: 1 });
    expect(await snapshot(client, queue.keys)).toEqual(before);
    expect(first.id).toBe('order-42');
    const [bulkDup] = await queue.addBulk([{ name: 'c', data: { v: 3 }, opts: { jobId: 'order-42' } }]);
    expect(bulkDup.data).toEqual({ v: 1 });
    expect(await snapshot(client, queue.keys)).toEqual(before);
  });

  it('addBulk adds many jobs in one round trip, in order', async () => {
    const queue = newQueue();
    const jobs = await queue.addBulk(Array.from({ length: 50 }, (_, i) => ({ name: 'n', data: { i } })));
    expect(jobs.map((j) => j.id)).toEqual(Array.from({ length: 50 }, (_, i) => String(i + 1)));
    expect(await queue.getJobCounts('wait')).toEqual({ wait: 50 });
  });

  it('getJobs lists jobs in run order per state, with start/end; getJobCounts counts every state', async () => {
    const queue = newQueue();
    await queue.addBulk([
      { name: 'w1', data: 1 }, { name: 'w2', data: 2 }, { name: 'w3', data: 3 },
      { name: 'p', data: 4, opts: { priority: 1 } },
      { name: 'd', data: 5, opts: { delay: 60_000 } },
    ]);
    expect((await queue.getJobs('wait')).map((j) => j.name)).toEqual(['w1', 'w2', 'w3']);
    expect((await queue.getJobs('wait', 0, 1)).map((j) => j.name)).toEqual(['w1', 'w2']);
    expect((await queue.getJobs('wait', 1, 2)).map((j) => j.name)).toEqual(['w2', 'w3']);
    expect((await queue.getJobs(['prioritized', 'delayed'])).map((j) => j.name)).toEqual(['p', 'd']);
    expect(await queue.getJobCounts()).toEqual({ wait: 3, paused: 0, prioritized: 1, active: 0, delayed: 1, completed: 0, failed: 0, 'waiting-children': 0 });
  });
});

describe('Queue: pause, drain, clean, obliterate, close', () => {
  it('pause and resume move waiting jobs and set isPaused', async () => {
    const queue = newQueue();
    await queue.add('a', {});
    expect(await queue.isPaused()).toBe(false);
    await queue.pause();
    expect(await queue.isPaused()).toBe(true);
    await queue.add('b', {});
    expect(await queue.getJobCounts('wait', 'paused')).toEqual({ wait: 0, paused: 2 });
    await queue.resume();
    expect(await queue.isPaused()).toBe(false);
    expect((await queue.getJobs('wait')).map((j) => j.name)).toEqual(['a', 'b']);
  });

  it('drain removes waiting and prioritized jobs, and delayed ones only when asked', async () => {
    const queue = newQueue();
    await queue.addBulk([{ name: 'a', data: 1 }, { name: 'p', data: 2, opts: { priority: 2 } }, { name: 'd', data: 3, opts: { delay: 60_000 } }]);
    await queue.drain();
    expect(await queue.getJobCounts('wait', 'prioritized', 'delayed')).toEqual({ wait: 0, prioritized: 0, delayed: 1 });
    await queue.drain(true);
    expect(await queue.getJobCounts('delayed')).toEqual({ delayed: 0 });
    expect(await queueKeys(client, queue.name)).not.toContain(queue.keys.job('1'));
  });

  it('clean removes jobs older than the grace period, up to the limit, from one state', async () => {
    const queue = newQueue();
    await queue.addBulk([{ name: 'a', data: 1 }, { name: 'b', data: 2 }, { name: 'c', data: 3 }]);
    expect(await queue.clean(60_000, 0, 'wait')).toEqual([]);
    const removed = await queue.clean(0, 2, 'wait');
    expect(removed).toHaveLength(2);
    expect(await queue.getJobCounts('wait')).toEqual({ wait: 1 });
    for (const id of removed) expect(await queue.getJob(id)).toBeUndefined();
  });

  it('obliterate deletes every key of the queue; refuses while jobs are active unless forced', async () => {
    const queue = newQueue();
    await queue.addBulk([{ name: 'a', data: 1 }, { name: 'b', data: 2, opts: { delay: 60_000 } }]);
    await client.rpoplpush(queue.keys.wait, queue.keys.active);
    await client.set(queue.keys.lock('1'), 'token', 'PX', 30_000);
    const error = await queue.obliterate().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EchoMQError);
    expect((error as EchoMQError).code).toBe(-3);
    expect(await queueKeys(client, queue.name)).toContain(queue.keys.job('2'));
    await queue.obliterate({ force: true });
    expect(await queueKeys(client, queue.name)).toEqual([]);
  });

  it('close refuses later adds and leaves a caller-owned connection open', async () => {
    const queue = newQueue();
    await queue.close();
    await expect(queue.add('a', {})).rejects.toThrow('is closed');
    const shared = new Queue(uniqueQueueName(), { connection: client });
    await shared.close();
    expect(await client.ping()).toBe('PONG');
  });
});

describe('Queue: option validation', () => {
  const bad: Array<[string, JobOptions | Record<string, unknown>]> = [
    ['delay', { delay: -1 }],
    ['delay', { delay: 1.5 }],
    ['priority', { priority: 2 ** 21 }],
    ['priority', { priority: -3 }],
    ['attempts', { attempts: 0 }],
    ['backoff.type', { backoff: { type: '', delay: 10 } }],
    ['backoff.jitter', { backoff: { type: 'exponential', delay: 10, jitter: -0.5 } }],
    ['backoff.delay', { backoff: { type: 'fixed', delay: -5 } }],
    ['backoff', { backoff: 'soon' }],
    ['removeOnComplete', { removeOnComplete: -1 }],
    ['removeOnFail.age', { removeOnFail: { age: -1 } }],
    ['removeOnFail.count', { removeOnFail: { count: 1.2 } }],
    ['keepLogs', { keepLogs: -1 }],
    ['jobId', { jobId: 'a:b' }],
    ['jobId', { jobId: '17' }],
    ['jobId', { jobId: 'wait' }],
    ['jobId', { jobId: '' }],
  ];

  it.each(bad)('a bad %s is refused with EchoMQOptionError naming it, and nothing is written', async (field, opts) => {
    const queue = newQueue();
    await queue.add('seed', {});
    const before = await snapshot(client, queue.keys);
    const error = await queue.add('x', {}, opts as JobOptions).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EchoMQOptionError);
    expect((error as EchoMQOptionError).field).toContain(field);
    expect((error as Error).message).toContain(field);
    const bulk = await queue.addBulk([{ name: 'ok', data: {} }, { name: 'x', data: {}, opts: opts as JobOptions }]).catch((e: unknown) => e);
    expect(bulk).toBeInstanceOf(EchoMQOptionError);
    expect(await snapshot(client, queue.keys)).toEqual(before);
  });

  const badData: Array<[string, unknown]> = [
    ['a function', { f: () => 1 }],
    ['a BigInt', { n: 10n }],
    ['NaN', { n: Number.NaN }],
    ['a Map', { m: new Map() }],
    ['a cycle', (() => { const o: Record<string, unknown> = {}; o.self = o; return o; })()],
  ];

  it.each(badData)('data holding %s is refused before Redis is touched', async (_what, data) => {
    const queue = newQueue();
    const error = await queue.add('x', data).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EchoMQOptionError);
    expect((error as EchoMQOptionError).field).toContain('data');
    expect(await queueKeys(client, queue.name)).toEqual([]);
  });

  it('refuses bad queue names, prefixes, queue options, job names and oversize data', async () => {
    for (const name of ['', 'a:b', 'a{b}', 'x'.repeat(201)]) {
      expect(() => new Queue(name, { connection: client })).toThrow(EchoMQOptionError);
    }
    expect(() => new Queue('ok', { connection: client, prefix: 'p{x}' })).toThrow(expect.objectContaining({ field: 'prefix' }));
    expect(() => new Queue('ok', { connection: client, defaultJobOptions: { attempts: -1 } }))
      .toThrow(expect.objectContaining({ field: 'defaultJobOptions.attempts' }));
    const queue = newQueue(undefined, { maxDataSize: 100 });
    await expect(queue.add('', {})).rejects.toThrow(EchoMQOptionError);
    await expect(queue.add('big', { s: 'x'.repeat(200) })).rejects.toThrow(/maxDataSize/);
    await expect(queue.clean(-1)).rejects.toThrow(expect.objectContaining({ field: 'grace' }));
    expect(await queueKeys(client, queue.name)).toEqual([]);
  });
});
