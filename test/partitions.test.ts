import { afterEach, describe, expect, it } from '@jest/globals';
import { EchoMQOptionError, Queue, Worker } from '../lib/index.js';
import { partitionOf } from '../lib/protocol/partitions.js';
import { eventually, testConnection, uniqueQueueName, newClient } from './support/redis.js';

const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (closers.length) await closers.pop()!();
});

function queue(name: string, partitions: number) {
  const q = new Queue(name, { connection: testConnection(), partitions });
  closers.push(async () => {
    await q.obliterate({ force: true });
    await q.close();
  });
  return q;
}

function worker(name: string, partitions: number, handler: (job: any) => unknown, opts: Record<string, unknown> = {}) {
  const w = new Worker(name, async (job) => handler(job), { connection: testConnection(), partitions, ...opts });
  closers.push(() => w.close());
  return w;
}

describe('a partitioned queue', () => {
  it('routes by partitionKey, then jobId, else round-robin; automatic ids name their partition', async () => {
    const name = uniqueQueueName('part');
    const q = queue(name, 4);
    const a = await q.add('x', {}, { partitionKey: 'customer-7' });
    const b = await q.add('x', {}, { partitionKey: 'customer-7' });
    expect(a.id.split('-')[0]).toBe(String(partitionOf('customer-7', 4)));
    expect(b.id.split('-')[0]).toBe(a.id.split('-')[0]);
    const spread = await Promise.all([0, 1, 2, 3].map(() => q.add('y', {})));
    expect(new Set(spread.map((job) => job.id.split('-')[0])).size).toBe(4);
    const custom = await q.add('z', { n: 1 }, { jobId: 'order-1' });
    expect(custom.id).toBe('order-1');
    const again = await q.add('z', { n: 2 }, { jobId: 'order-1' });
    expect(again.data).toEqual({ n: 1 });
    expect((await q.getJob(a.id))?.id).toBe(a.id);
    expect((await q.getJob('order-1'))?.data).toEqual({ n: 1 });
    expect(await q.getJobCounts('wait')).toEqual({ wait: 7 });
    const keys = q.partitionKeys.map((k) => k.base);
    expect(keys).toEqual([0, 1, 2, 3].map((i) => `emq:{${name}#${i}}:`));
  });

  it('refuses bad input before writing anything', async () => {
    const name = uniqueQueueName('part');
    expect(() => new Queue(name, { connection: testConnection(), partitions: 0 })).toThrow(EchoMQOptionError);
    expect(() => new Queue('a#b', { connection: testConnection(), partitions: 2 })).toThrow(/"#"/);
    const q = queue(name, 3);
    await expect(q.add('x', {}, { jobId: '1-2' })).rejects.toThrow(/automatic ids/);
    await expect(q.add('x', {}, { partitionKey: '' as string })).rejects.toThrow(/partitionKey/);
    expect(await q.getJobCounts('wait', 'delayed')).toEqual({ wait: 0, delayed: 0 });
  });

  it('one worker processes every partition, with jobs of one key in add order', async () => {
    const name = uniqueQueueName('part');
    const q = queue(name, 8);
    const seen: Array<{ key: string; n: number }> = [];
    const w = worker(name, 8, (job) => void seen.push(job.data), { concurrency: 1 });
    await w.waitUntilReady();
    const jobs = [];
    for (let n = 0; n < 40; n++) jobs.push({ name: 'x', data: { key: `k${n % 5}`, n }, opts: { partitionKey: `k${n % 5}` } });
    await q.addBulk(jobs);
    await eventually(() => seen.length === 40, 15_000, 'all 40 jobs run');
    for (let k = 0; k < 5; k++) {
      const order = seen.filter((d) => d.key === `k${k}`).map((d) => d.n);
      expect(order).toEqual([...order].sort((x, y) => x - y));
    }
    expect(await q.getJobCounts('completed')).toEqual({ completed: 40 });
  });

  it('wakes an idle worker on an add to any partition, and fires delayed jobs on time', async () => {
    const name = uniqueQueueName('part');
    const q = queue(name, 4);
    const done: string[] = [];
    const w = worker(name, 4, (job) => void done.push(job.id), { drainDelay: 60 });
    await w.waitUntilReady();
    await new Promise((r) => setTimeout(r, 300)); // the worker has looked everywhere and waits
    for (let i = 0; i < 4; i++) await q.add('x', {});
    await eventually(() => done.length === 4, 3000, 'adds to every partition woke the worker');
    await q.add('later', {}, { delay: 300 });
    await eventually(() => done.length === 5, 3000, 'the delayed job ran');
  });
});
