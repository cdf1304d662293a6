import { afterEach, describe, expect, it } from '@jest/globals';
import { FlowProducer, Queue, Worker, type Job, type ProcessorFunction } from '../lib/index.js';
import { FlowScripts } from '../lib/protocol/flow-scripts.js';
import { eventually, newClient, testConnection, uniqueQueueName } from './support/redis.js';

// Removing jobs of a flow (docs/flows.md, "Removing jobs of a flow"): a parent takes its flow keys
// and (by default) its unsettled children with it; a removed child is dropped by its parent.

const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (closers.length > 0) await closers.pop()!();
});

function queue(name: string): Queue {
  const q = new Queue(name, { connection: testConnection() });
  closers.push(() => q.close());
  return q;
}

function producer(): FlowProducer {
  const flow = new FlowProducer({ connection: testConnection() });
  closers.push(() => flow.close());
  return flow;
}

function worker(name: string, processor: ProcessorFunction, opts: Record<string, unknown> = {}): Worker {
  const w = new Worker(name, processor, { connection: testConnection(), ...opts });
  const errors: Error[] = [];
  w.on('error', (error) => errors.push(error));
  closers.push(async () => {
    await w.close(true);
    expect(errors).toEqual([]);
  });
  return w;
}

async function finished(q: Queue, jobId: string, timeoutMs = 10_000): Promise<Job> {
  return eventually<Job | undefined>(async () => {
    const job = await q.getJob(jobId);
    return job?.finishedOn !== undefined ? job : undefined;
  }, timeoutMs, `job ${jobId} of ${q.name} finished`) as Promise<Job>;
}

const FLOW_PARTS = ['dependencies', 'processed', 'unsuccessful', 'ignored', 'pending'] as const;

async function flowKeysLeft(q: Queue, jobId: string): Promise<number> {
  const client = newClient();
  try {
    return await client.exists(...FLOW_PARTS.map((part) => q.keys.flow(jobId, part)));
  } finally {
    client.disconnect();
  }
}

async function twoLevels(childCount = 3) {
  const [parents, children, grandchildren] = [uniqueQueueName('parents'), uniqueQueueName('children'), uniqueQueueName('grand')];
  const tree = await producer().add({
    name: 'parent', queueName: parents,
    children: Array.from({ length: childCount }, (_, i) => ({
      name: `child-${i}`, queueName: children, data: { i },
      children: i === 0 ? [{ name: 'grandchild', queueName: grandchildren }] : undefined,
    })),
  });
  return { tree, parentQueue: queue(parents), childQueue: queue(children), grandQueue: queue(grandchildren), children, parents };
}

describe('removing a parent', () => {
  it('takes its flow keys and, by default, its unsettled children and theirs', async () => {
    const f = await twoLevels();
    // child-2 completes first (its value is in :processed; settled, it stays); child-1 runs on.
    const [, held, done] = f.tree.children!.map((c) => c.job);
    worker(f.children, async (job) => (job.id === done.id ? 'ok' : new Promise(() => undefined)), { concurrency: 2 });
    await eventually(async () => (await f.tree.job.getDependenciesCount()).processed === 1, 5000, 'one child settled');
    await eventually(async () => (await held.getState()) === 'active', 5000, 'the other child running');
    const grandchild = f.tree.children![0].children![0].job;
    await f.tree.job.remove();
    expect(await f.parentQueue.getJob(f.tree.job.id)).toBeUndefined();
    expect(await flowKeysLeft(f.parentQueue, f.tree.job.id)).toBe(0);
    expect(await f.parentQueue.getJobCounts('waiting-children')).toEqual({ 'waiting-children': 0 });
    expect(await f.childQueue.getJob(done.id)).toBeDefined(); // settled: not the parent's to remove
    expect(await held.getState()).toBe('active'); // held by a worker: left to finish
    expect(await f.childQueue.getJob(f.tree.children![0].job.id)).toBeUndefined(); // waiting for its child: removed
    expect(await f.grandQueue.getJob(grandchild.id)).toBeUndefined(); // and its child with it
  });

  it('removes waiting children and grandchildren, and keeps them with removeChildren: false', async () => {
    const f = await twoLevels();
    const [first, second] = f.tree.children!.map((c) => c.job);
    const grandchild = f.tree.children![0].children![0].job;
    expect(await f.parentQueue.remove(f.tree.job.id)).toBe(1);
    expect(await f.childQueue.getJob(second.id)).toBeUndefined();
    expect(await f.childQueue.getJob(first.id)).toBeUndefined();
    expect(await flowKeysLeft(f.childQueue, first.id)).toBe(0);
    expect(await f.grandQueue.getJob(grandchild.id)).toBeUndefined();
    expect(await f.childQueue.getJobCounts('waiting-children', 'wait')).toEqual({ 'waiting-children': 0, wait: 0 });

    const g = await twoLevels();
    await g.tree.job.remove({ removeChildren: false });
    expect(await g.parentQueue.getJob(g.tree.job.id)).toBeUndefined();
    expect(await g.childQueue.getJobCounts('wait', 'waiting-children')).toEqual({ wait: 2, 'waiting-children': 1 });
    // Those children run; their settle finds no parent and does nothing, and their notices go.
    worker(g.children, async () => 'orphan');
    for (const c of g.tree.children!.slice(1)) await finished(g.childQueue, c.job.id);
    const client = newClient();
    try {
      await eventually(async () => (await client.zcard(g.childQueue.keys.notices)) === 0, 5000, 'the notices deleted');
      expect(await client.exists(g.parentQueue.keys.job(g.tree.job.id))).toBe(0);
    } finally {
      client.disconnect();
    }
    await expect(g.tree.job.remove({ removeChildren: 'no' as never })).rejects.toMatchObject({ name: 'EchoMQOptionError', field: 'removeChildren' });
  });

  it('a child still running when its parent is removed finishes; its settle answers -1 and its notice is deleted', async () => {
    const f = await twoLevels(1);
    // The lone child has a grandchild: finish that so the child runs.
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    worker(f.grandQueue.name, async () => 'g');
    worker(f.children, async () => { await gate; return 'late'; });
    const child = f.tree.children![0].job;
    await eventually(async () => (await child.getState()) === 'active', 5000, 'the child running');
    await f.tree.job.remove();
    expect(await child.getState()).toBe('active');
    release();
    await finished(f.childQueue, child.id);
    const client = newClient();
    try {
      await eventually(async () => (await client.zcard(f.childQueue.keys.notices)) === 0, 5000, 'the notice deleted');
      expect(await client.hlen(f.childQueue.keys.noticeData)).toBe(0);
      // What that settle answered, asked again (a settle is idempotent): -1, no parent.
      const settled = await new FlowScripts(client, f.parentQueue.keys, 100).settleChildren(
        [{ parentId: f.tree.job.id, childKey: f.childQueue.keys.job(child.id), outcome: 'completed', value: '"late"', policy: '' }], Date.now());
      expect(settled.codes).toEqual([-1]);
      expect(await client.exists(f.parentQueue.keys.job(f.tree.job.id), f.parentQueue.keys.flow(f.tree.job.id, 'processed'))).toBe(0);
    } finally {
      client.disconnect();
    }
  });
});

describe('removing a child', () => {
  it('drops it from its parent, which starts when it was the last one', async () => {
    const f = await twoLevels(2);
    const [, last] = f.tree.children!.map((c) => c.job);
    const first = f.tree.children![0].job;
    await first.remove(); // a parent itself: its grandchild goes too
    expect(await f.tree.job.getDependenciesCount()).toEqual({ processed: 0, unprocessed: 1, failed: 0, ignored: 0 });
    expect(await f.tree.job.getState()).toBe('waiting-children');
    expect(await f.childQueue.remove(last.id)).toBe(1);
    expect(await f.tree.job.getState()).toBe('wait');
    const client = newClient();
    try {
      expect(await client.zcard(f.childQueue.keys.notices)).toBe(0);
    } finally {
      client.disconnect();
    }
  });

  it('a child that failed with no policy, removed, is no failure of its parent any more', async () => {
    const [parents, children] = [uniqueQueueName('parents'), uniqueQueueName('children')];
    const tree = await producer().add({ name: 'p', queueName: parents, children: [{ name: 'bad', queueName: children }] });
    const childQueue = queue(children);
    worker(children, async () => { throw new Error('boom'); });
    const bad = tree.children![0].job;
    await finished(childQueue, bad.id);
    await eventually(async () => (await tree.job.getDependenciesCount()).failed === 1, 5000, 'the failure recorded');
    await bad.remove();
    expect(await tree.job.getDependenciesCount()).toEqual({ processed: 0, unprocessed: 0, failed: 0, ignored: 0 });
    expect(await tree.job.getState()).toBe('wait');
  });

  it('a locked child is refused and nothing changes', async () => {
    const f = await twoLevels(2);
    worker(f.children, async () => new Promise(() => undefined));
    const second = f.tree.children![1].job;
    await eventually(async () => (await second.getState()) === 'active', 5000, 'running');
    await expect(second.remove()).rejects.toMatchObject({ code: -3 });
    expect(await f.childQueue.remove(second.id)).toBe(0);
    expect((await f.tree.job.getDependenciesCount()).unprocessed).toBe(2);
  });
});

describe('drain, clean and obliterate', () => {
  it('take the flow keys of the jobs they delete', async () => {
    const f = await twoLevels(2);
    const child0 = f.tree.children![0].job; // a parent in waiting-children
    // obliterate of the parents' queue: its parent in waiting-children goes, with its flow keys.
    await f.parentQueue.obliterate();
    expect(await flowKeysLeft(f.parentQueue, f.tree.job.id)).toBe(0);
    const client = newClient();
    try {
      expect(await client.exists(f.parentQueue.keys.waitingChildren, f.parentQueue.keys.flowPending, f.parentQueue.keys.job(f.tree.job.id))).toBe(0);
      // clean of waiting-children? Not a state clean takes; drain of the grandchildren's queue, then clean the children's parent.
      await f.grandQueue.drain();
      expect(await f.grandQueue.getJobCounts('wait')).toEqual({ wait: 0 });
      // The child whose grandchild was drained still waits (drain cannot tell it): its keys go when it is removed.
      expect(await child0.getState()).toBe('waiting-children');
      await child0.remove();
      expect(await flowKeysLeft(f.childQueue, child0.id)).toBe(0);
      // A finished parent cleaned: its processed values go with it.
      const h = await twoLevels(1);
      worker(h.grandQueue.name, async () => 'g');
      worker(h.children, async () => 'c');
      worker(h.parents, async () => 'p');
      await finished(h.parentQueue, h.tree.job.id);
      expect(await flowKeysLeft(h.parentQueue, h.tree.job.id)).toBe(1);
      expect(await h.parentQueue.clean(0, 0, 'completed')).toEqual([h.tree.job.id]);
      expect(await flowKeysLeft(h.parentQueue, h.tree.job.id)).toBe(0);
    } finally {
      client.disconnect();
    }
  });
});
