import { afterEach, describe, expect, it } from '@jest/globals';
import { FlowProducer, Queue, Worker, type FlowTreeNode, type ProcessorFunction } from '../lib/index.js';
import { eventually, testConnection, uniqueQueueName } from './support/redis.js';

// FlowProducer.getFlow (docs/flows.md): a tree read back from Redis, its levels in other queues
// (other hash slots: on the cluster run, other nodes).

const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (closers.length > 0) await closers.pop()!();
});

function producer(): FlowProducer {
  const flow = new FlowProducer({ connection: testConnection() });
  closers.push(() => flow.close());
  return flow;
}

function worker(name: string, processor: ProcessorFunction, concurrency = 1): Worker {
  const w = new Worker(name, processor, { connection: testConnection(), concurrency });
  closers.push(() => w.close(true));
  return w;
}

function queue(name: string): Queue {
  const q = new Queue(name, { connection: testConnection() });
  closers.push(() => q.close());
  return q;
}

/** The tree as names and ids, to compare with what was added. */
function shape(node: FlowTreeNode): unknown {
  const own = { name: node.job?.name, id: node.job?.id, queue: node.job?.queueName };
  return node.children ? { ...own, children: node.children.map(shape) } : own;
}

describe('FlowProducer.getFlow', () => {
  it('reads a three-level tree over three queues, as added and as its children finish', async () => {
    const [top, middle, leaves] = [uniqueQueueName('top'), uniqueQueueName('mid'), uniqueQueueName('leaf')];
    const flow = producer();
    const added = await flow.add({
      name: 'root', queueName: top, data: { r: 1 },
      children: [0, 1].map((m) => ({
        name: `mid-${m}`, queueName: middle, data: { m },
        children: [0, 1].map((l) => ({ name: `leaf-${m}.${l}`, queueName: leaves, data: { m, l }, opts: { jobId: `leaf-${m}-${l}` } })),
      })),
    });
    const sortById = (node: FlowTreeNode): unknown => {
      const s = shape(node) as { children?: Array<{ id: string }> };
      if (s.children) s.children = (node.children ?? []).map(sortById).sort((a, b) => ((a as { id: string }).id < (b as { id: string }).id ? -1 : 1)) as Array<{ id: string }>;
      return s;
    };
    const read = await flow.getFlow({ id: added.job.id, queueName: top });
    expect(sortById(read)).toEqual(sortById(added as FlowTreeNode));
    expect(read.job!.data).toEqual({ r: 1 });
    expect(await read.job!.getState()).toBe('waiting-children');
    const mid0 = read.children!.find((c) => c.job!.name === 'mid-0')!;
    expect(mid0.job!.parent).toEqual({ id: added.job.id, queueKey: `emq:{${top}}` });

    // The leaves run (one fails, with no policy): completed, then failed, in the parent's list.
    worker(leaves, async (job) => {
      if (job.id === 'leaf-1-1') throw new Error('leaf broke');
      return `${job.name} done`;
    });
    const leafQueue = queue(leaves);
    await eventually(async () => (await Promise.all(['leaf-0-0', 'leaf-0-1', 'leaf-1-0', 'leaf-1-1'].map((id) => leafQueue.getJob(id))))
      .every((job) => job?.finishedOn !== undefined), 10_000, 'every leaf finished');
    const mid1Id = added.children!.find((c) => c.job.name === 'mid-1')!.job.id;
    await eventually(async () => (await (await queue(middle).getJob(mid1Id))!.getDependenciesCount()).processed === 1, 5000, 'mid-1 settled');
    const after = await flow.getFlow({ id: added.job.id, queueName: top });
    const byName = (node: FlowTreeNode, name: string) => node.children!.find((c) => c.job!.name === name)!;
    const readMid1 = byName(after, 'mid-1');
    expect(readMid1.children!.map((c) => c.job!.id)).toEqual(['leaf-1-0', 'leaf-1-1']);
    expect(readMid1.children![0].job!.returnvalue).toBe('leaf-1.0 done');
    expect(readMid1.children![1].job!.failedReason).toBe('leaf broke');
    expect(await readMid1.job!.getState()).toBe('waiting-children');
    await eventually(async () => (await byName(after, 'mid-0').job!.getState()) === 'wait', 5000, 'mid-0 ready');

    // Any job of the tree can be the top of a read: a middle one, in its own queue.
    const fromMiddle = await flow.getFlow({ id: mid1Id, queueName: middle });
    expect(fromMiddle.job!.name).toBe('mid-1');
    expect(fromMiddle.children!.map((c) => c.job!.id)).toEqual(['leaf-1-0', 'leaf-1-1']);
  });

  it('stops at depth levels and lists at most maxChildren children of a job', async () => {
    const [parents, children] = [uniqueQueueName('parents'), uniqueQueueName('children')];
    const flow = producer();
    const added = await flow.add({
      name: 'root', queueName: parents,
      children: [{
        name: 'mid', queueName: parents,
        children: Array.from({ length: 5 }, (_, i) => ({ name: `leaf-${i}`, queueName: children })),
      }],
    });
    const rootOnly = await flow.getFlow({ id: added.job.id, queueName: parents, depth: 1 });
    expect(rootOnly.job!.id).toBe(added.job.id);
    expect(rootOnly.children).toBeUndefined();
    const twoLevels = await flow.getFlow({ id: added.job.id, queueName: parents, depth: 2 });
    expect(twoLevels.children!.map((c) => c.job!.name)).toEqual(['mid']);
    expect(twoLevels.children![0].children).toBeUndefined();

    const all = await flow.getFlow({ id: added.job.id, queueName: parents });
    expect(all.children![0].children).toHaveLength(5);
    expect(all.children![0].children!.every((c) => c.children === undefined)).toBe(true);
    const capped = await flow.getFlow({ id: added.job.id, queueName: parents, maxChildren: 2 });
    expect(capped.children![0].children).toHaveLength(2);
    const leafIds = new Set(added.children![0].children!.map((c) => c.job.id));
    for (const leaf of capped.children![0].children!) expect(leafIds.has(leaf.job!.id)).toBe(true);
  });

  it('refuses bad options before reading, naming the field', async () => {
    const flow = producer();
    const queueName = uniqueQueueName('bad');
    await expect(flow.getFlow({ id: '1', queueName, depth: 0 })).rejects.toMatchObject({ name: 'EchoMQOptionError', field: 'depth' });
    await expect(flow.getFlow({ id: '1', queueName, depth: 1.5 })).rejects.toMatchObject({ field: 'depth' });
    await expect(flow.getFlow({ id: '1', queueName, maxChildren: 0 })).rejects.toMatchObject({ field: 'maxChildren' });
    await expect(flow.getFlow({ id: '1', queueName, maxChildren: '3' as unknown as number })).rejects.toMatchObject({ field: 'maxChildren' });
    await expect(flow.getFlow({ id: '', queueName })).rejects.toMatchObject({ field: 'id' });
    await expect(flow.getFlow({ id: '1', queueName: '' })).rejects.toMatchObject({ field: 'queueName' });
    await expect(flow.getFlow({ id: '1', queueName, prefix: '' })).rejects.toMatchObject({ field: 'prefix' });
  });

  it('answers job undefined for a missing id, and for a child whose job is gone (removeOnComplete)', async () => {
    const [parents, children] = [uniqueQueueName('parents'), uniqueQueueName('children')];
    const flow = producer();
    expect(await flow.getFlow({ id: 'no-such-job', queueName: parents })).toEqual({ job: undefined });
    expect(await flow.getFlow({ id: 'wait', queueName: parents })).toEqual({ job: undefined }); // a queue key's name, not a job's
    const added = await flow.add({
      name: 'root', queueName: parents,
      children: [
        { name: 'kept', queueName: children, opts: { jobId: 'a-kept' } },
        { name: 'gone', queueName: children, opts: { jobId: 'b-gone', removeOnComplete: true } },
      ],
    });
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    worker(children, async (job) => {
      if (job.id === 'a-kept') await gate; // stays active: the parent's key of it stays open
      return 'ok';
    }, 2);
    await eventually(async () => (await added.job.getDependenciesCount()).processed === 1, 10_000, 'the removed child settled');
    const read = await flow.getFlow({ id: added.job.id, queueName: parents });
    // Completed first (its hash is gone: removeOnComplete), then the one not finished.
    expect(read.children!.map((c) => c.job?.id)).toEqual([undefined, 'a-kept']);
    expect(read.children![0]).toEqual({ job: undefined });
    release();
    await eventually(async () => (await added.job.getDependenciesCount()).processed === 2, 10_000, 'the other child settled');
  });

  it('reads on a closed producer is refused', async () => {
    const flow = new FlowProducer({ connection: testConnection() });
    await flow.close();
    await expect(flow.getFlow({ id: '1', queueName: uniqueQueueName('closed') })).rejects.toThrow(/closed/);
  });
});
