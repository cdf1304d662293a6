import { afterEach, describe, expect, it } from '@jest/globals';
import { EchoMQOptionError, LockManager, Queue, Worker } from '../lib/index.js';
import { partitionOf } from '../lib/protocol/partitions.js';
import { orderAcrossPartitions, sliceLikeRange } from '../lib/runtime/job/partition-order.js';
import { eventually, masters, newClient, sleep, testConnection, uniqueQueueName } from './support/redis.js';

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
    await sleep(300); // the worker has looked everywhere and waits
    for (let i = 0; i < 4; i++) await q.add('x', {});
    await eventually(() => done.length === 4, 3000, 'adds to every partition woke the worker');
    await q.add('later', {}, { delay: 300 });
    await eventually(() => done.length === 5, 3000, 'the delayed job ran');
  });
});

describe('a partitioned queue under load', () => {
  it('starves no partition: a flooded one does not hold back another one\'s jobs', async () => {
    const name = uniqueQueueName('part');
    const q = queue(name, 4);
    const flooded = 'flood';
    const other = ['a', 'b', 'c', 'd', 'e', 'f'].find((k) => partitionOf(k, 4) !== partitionOf(flooded, 4))!;
    await q.addBulk(Array.from({ length: 400 }, (_, n) => ({ name: 'f', data: { n }, opts: { partitionKey: flooded } })));
    const order: string[] = [];
    const w = worker(name, 4, async (job) => {
      order.push(job.name);
      await sleep(1);
    }, { concurrency: 4, autorun: false });
    void w.run();
    await eventually(() => order.length >= 20, 10_000, 'the worker is busy with the flood');
    await q.add('other', {}, { partitionKey: other });
    await eventually(() => order.includes('other'), 10_000, 'the other partition\'s job ran');
    // Taken within a few fetches of its add, not after the 400 jobs of the flood.
    expect(order.indexOf('other')).toBeLessThan(200);
  });

  it('partitionConcurrency 1: two workers never run two jobs of one partition at once, and each key runs in add order', async () => {
    const name = uniqueQueueName('part');
    const q = queue(name, 3);
    const runningPer = new Map<string, number>();
    const orderPer = new Map<string, number[]>();
    let overlap = 0;
    let done = 0;
    let mostAtOnce = 0;
    let running = 0;
    const handler = async (job: any) => {
      const partition = job.id.split('-')[0];
      runningPer.set(partition, (runningPer.get(partition) ?? 0) + 1);
      if (runningPer.get(partition)! > 1) overlap++;
      mostAtOnce = Math.max(mostAtOnce, ++running);
      orderPer.set(job.data.key, [...(orderPer.get(job.data.key) ?? []), job.data.n]);
      await sleep(5);
      running--;
      runningPer.set(partition, runningPer.get(partition)! - 1);
      done++;
    };
    const workers = [worker(name, 3, handler, { concurrency: 10, partitionConcurrency: 1 }), worker(name, 3, handler, { concurrency: 10, partitionConcurrency: 1 })];
    await Promise.all(workers.map((w) => w.waitUntilReady()));
    await q.addBulk(Array.from({ length: 60 }, (_, n) => ({ name: 'x', data: { n, key: `k${n % 6}` }, opts: { partitionKey: `k${n % 6}` } })));
    await eventually(() => done === 60, 20_000, 'all 60 jobs run');
    expect(overlap).toBe(0);
    for (const [, order] of orderPer) expect(order).toEqual([...order].sort((x, y) => x - y));
    // ... and the partitions ran side by side.
    expect(mostAtOnce).toBeGreaterThan(1);
    expect(() => new Worker(name, async () => undefined, { connection: testConnection(), partitionConcurrency: 1, autorun: false })).toThrow(/partitionConcurrency/);
  });

  it('pause, resume, drain, clean and obliterate reach every partition', async () => {
    const name = uniqueQueueName('part');
    const q = queue(name, 4);
    await q.pause();
    expect(await q.isPaused()).toBe(true);
    await q.addBulk(Array.from({ length: 8 }, (_, n) => ({ name: 'x', data: { n } })));
    expect(await q.getJobCounts('paused', 'wait')).toEqual({ paused: 8, wait: 0 });
    const done: string[] = [];
    const w = worker(name, 4, (job) => void done.push(job.id));
    await w.waitUntilReady();
    await sleep(200);
    expect(done).toEqual([]);
    await q.resume();
    expect(await q.isPaused()).toBe(false);
    await eventually(() => done.length === 8, 5000, 'resumed jobs ran');
    expect(new Set(done.map((id) => id.split('-')[0])).size).toBe(4);
    const cleaned = await q.clean(0, 0, 'completed');
    expect(cleaned.sort()).toEqual([...done].sort());
    await w.close();
    await q.addBulk(Array.from({ length: 8 }, (_, n) => ({ name: 'x', data: { n } })));
    await q.drain();
    expect(await q.getJobCounts('wait')).toEqual({ wait: 0 });
    await q.add('y', {}, { delay: 60_000 });
    await q.obliterate();
    expect(await q.getJobCounts()).toEqual({ wait: 0, paused: 0, active: 0, prioritized: 0, delayed: 0, completed: 0, failed: 0, 'waiting-children': 0 });
  });

  it('orders getJobs across partitions: oldest waiting first, newest finished first', async () => {
    const name = uniqueQueueName('part');
    const q = queue(name, 4);
    const added = [];
    for (let n = 0; n < 8; n++) {
      added.push(await q.add('x', { n }));
      await sleep(2);
    }
    const waiting = await q.getJobs('wait');
    expect(waiting.map((job) => job.id)).toEqual(added.map((job) => job.id));
    expect((await q.getJobs('waiting', 2, 4)).map((job) => job.id)).toEqual(added.slice(2, 5).map((job) => job.id));
    expect(() => q.keys).toThrow(/partitionKeys/);
  });

  it('a job whose lock lapsed in one partition is swept back and completed there', async () => {
    const name = uniqueQueueName('part');
    const q = queue(name, 3);
    const job = await q.add('x', {}, { partitionKey: 'p' });
    const events: string[] = [];
    const first = new Worker(name, async () => new Promise(() => undefined), {
      connection: testConnection(), partitions: 3, lockDuration: 300, unsafeLockRenewTime: 10_000, stalledInterval: 200,
    });
    closers.push(() => first.close(true));
    await eventually(async () => (await q.getJobCounts('active')).active === 1, 5000, 'the job is active');
    await first.close(true);
    const second = worker(name, 3, () => 'done', { lockDuration: 1000, stalledInterval: 200 });
    second.on('stalled', (id) => events.push(`stalled ${id}`));
    await eventually(async () => (await q.getJob(job.id))?.returnvalue === 'done', 10_000, 'the stalled job completed');
    expect(events).toContain(`stalled ${job.id}`);
  });
});

describe('the heartbeat of a partitioned queue\'s worker', () => {
  it('is one timer for every partition, and keeps jobs that outlive lockDuration', async () => {
    const name = uniqueQueueName('part');
    const q = queue(name, 4);
    const lockManager = new LockManager();
    closers.push(() => lockManager.close());
    const renewedQueues = new Set<string>();
    lockManager.renewed$.subscribe((event) => renewedQueues.add(event.queue));
    const lost: string[] = [];
    let running = 0;
    let maxTimers = 0;
    const w = new Worker(name, async () => {
      running++;
      await sleep(1500);
      running--;
    }, { connection: testConnection(), partitions: 4, concurrency: 8, lockDuration: 600, lockManager });
    closers.push(() => w.close());
    w.on('lockLost', (job) => lost.push(job.id));
    await q.addBulk(Array.from({ length: 8 }, (_, n) => ({ name: 'x', data: { n } })));
    await eventually(() => running === 8, 5000, 'eight jobs running over four partitions');
    for (let i = 0; i < 10; i++) {
      maxTimers = Math.max(maxTimers, lockManager.activeTimers);
      await sleep(50);
    }
    await eventually(async () => (await q.getJobCounts('completed')).completed === 8, 10_000, 'all eight completed');
    expect(maxTimers).toBe(1);
    expect(lost).toEqual([]);
    expect([...renewedQueues].sort()).toEqual([0, 1, 2, 3].map((i) => `${name}#${i}`));
    expect(lockManager.workerIds).toEqual([w.id]);
    // A job counts as completed when its script ran; the worker stops tracking it when the reply
    // comes back, a moment later.
    await eventually(() => lockManager.trackedCount(w.id) === 0, 5000, 'no job tracked');
  });
});

describe('the connections of a partitioned queue\'s worker', () => {
  async function wakeSubscribersPerMaster(): Promise<number[]> {
    const client = newClient();
    try {
      const nodes = await masters(client);
      return await Promise.all(nodes.map(async (node) => {
        const list = (await node.call('CLIENT', 'LIST')) as string;
        return list.split('\n').filter((line) => / name=echomq:wake /.test(line)).length;
      }));
    } finally {
      client.disconnect();
    }
  }

  it('listens on 16 partitions with at most one connection per node, and closes them', async () => {
    const name = uniqueQueueName('part');
    queue(name, 16);
    const before = await wakeSubscribersPerMaster();
    const w = worker(name, 16, () => undefined);
    await w.waitUntilReady();
    const during = await wakeSubscribersPerMaster();
    const added = during.map((count, i) => count - before[i]);
    expect(Math.max(...added)).toBe(1);
    await w.close();
    await eventually(async () => (await wakeSubscribersPerMaster()).every((count, i) => count === before[i]), 5000, 'the subscribers closed');
  });
});

describe('review fixes', () => {
  it('a retried job wakes the workers of its partition (no wait for the full look)', async () => {
    const name = uniqueQueueName('part');
    const q = queue(name, 4);
    let tries = 0;
    const w = worker(name, 4, async (job) => {
      if (job.name === 'flaky' && ++tries === 1) {
        await sleep(100); // the worker's other slot finds the partition empty meanwhile
        throw new Error('first try fails');
      }
      return 'ok';
    }, { concurrency: 2, drainDelay: 60 });
    await w.waitUntilReady();
    await sleep(200);
    const job = await q.add('flaky', {}, { attempts: 2 });
    await eventually(async () => (await q.getJob(job.id))?.returnvalue === 'ok', 5000, 'the retry ran');
    expect(tries).toBe(2);
  });

  it('adding an existing custom id answers the job of the partition the add went to', async () => {
    const name = uniqueQueueName('part');
    const q = queue(name, 4);
    const keys = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];
    const other = keys.find((k) => partitionOf(k, 4) !== partitionOf('dup', 4))!;
    await q.add('x', { by: 'id' }, { jobId: 'dup' });
    await q.add('x', { by: 'key' }, { jobId: 'dup', partitionKey: other });
    const again = await q.add('x', { by: 'again' }, { jobId: 'dup', partitionKey: other });
    expect(again.data).toEqual({ by: 'key' });
  });
});

describe('orderAcrossPartitions', () => {
  const job = (id: string, timestamp: number) => ({ id, timestamp, delay: 0, priority: 0 }) as any;
  it('keeps each partition\'s order, so a page is the same whatever the page size', () => {
    // Partition 1's second job was retried: back at the end of its wait, with its old add time.
    const lists = [[job('0-1', 10), job('0-2', 30)], [job('1-5', 20), job('1-2', 5), job('1-6', 40)]];
    const all = orderAcrossPartitions('wait', lists).map((j) => j.id);
    expect(all).toEqual(['0-1', '1-5', '1-2', '0-2', '1-6']);
    const firstTwo = orderAcrossPartitions('wait', lists.map((l) => l.slice(0, 2))).map((j) => j.id);
    expect(sliceLikeRange(firstTwo, 0, 1)).toEqual(all.slice(0, 2));
  });
});

describe('the partition count in Redis', () => {
  it('refuses a Queue or Worker given another count than the queue\'s first client, before anything is added', async () => {
    const name = uniqueQueueName('part');
    const q = queue(name, 4);
    await q.add('x', {});
    const wrong = new Queue(name, { connection: testConnection(), partitions: 3 });
    closers.push(() => wrong.close());
    await expect(wrong.add('y', {})).rejects.toThrow(/was given 3, but the queue has 4 partitions/);
    await expect(wrong.addBulk([{ name: 'y', data: {} }])).rejects.toThrow(EchoMQOptionError);
    expect(await q.getJobCounts('wait')).toEqual({ wait: 1 });
    const errors: Error[] = [];
    const w = new Worker(name, async () => undefined, { connection: testConnection(), partitions: 8, autorun: false });
    closers.push(() => w.close());
    w.on('error', (error) => errors.push(error));
    await w.run();
    expect(errors.map((e) => e.message)).toEqual([expect.stringMatching(/this worker of queue .* was given 8, but the queue has 4 partitions/)]);
    expect(await q.getJobCounts('wait')).toEqual({ wait: 1 });
  });
});
