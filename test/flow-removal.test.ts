import { describe, expect, it } from '@jest/globals';
import { Queue } from '../lib/index.js';
import { FlowScripts } from '../lib/protocol/flow-scripts.js';
import { JobControlScripts } from '../lib/protocol/job-control-scripts.js';
import { eventually, newClient, scanKeys, singleNodeIt, uniqueQueueName } from './support/redis.js';
import { closers, finished, producer, queue, worker } from './support/test-resources.js';

// Removing jobs of a flow (docs/flows.md, "Removing jobs of a flow"): a parent takes its flow keys
// and (by default) its unsettled children with it; a removed child is dropped by its parent.

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

  // INFO of one server.
  singleNodeIt('frees a big :processed (a step job\'s settled children) in the background: UNLINK, not DEL', async () => {
    const f = await twoLevels(1);
    const client = newClient();
    closers.push(async () => client.disconnect());
    const processed = f.parentQueue.keys.flow(f.tree.job.id, 'processed');
    await client.hset(processed, ...Array.from({ length: 1000 }, (_, i) => [`emq:{${f.children}}:done-${i}`, '"v"']).flat());
    const lazyFreed = async () => Number(/lazyfreed_objects:(\d+)/.exec(await client.info('memory'))![1]);
    const before = await lazyFreed();
    await f.tree.job.remove();
    expect(await client.exists(processed)).toBe(0);
    await eventually(async () => (await lazyFreed()) > before, 5000, 'the key freed by the lazy-free thread');
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
    expect(await f.tree.job.getState()).toBe('waiting');
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
    expect(await tree.job.getState()).toBe('waiting');
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

describe('removing a child whose finish the parent has not heard of yet', () => {
  type Policy = '' | 'fail' | 'ignore' | 'continue' | 'remove';
  const OPTION: Record<Policy, Record<string, boolean>> = {
    '': {}, fail: { failParentOnFailure: true }, ignore: { ignoreDependencyOnFailure: true },
    continue: { continueParentOnFailure: true }, remove: { removeDependencyOnFailure: true },
  };

  /**
   * A parent with two children, no workers: `failed` failed for good under `policy` and its
   * notice is still in its queue (what a worker that died between its finish and the settle
   * leaves), `other` still waits, so the parent waits too.
   */
  async function failedUnheard(policy: Policy, noticeJson?: (parentKey: string) => string) {
    const [parents, children] = [uniqueQueueName('parents'), uniqueQueueName('children')];
    const tree = await producer().add({
      name: 'p', queueName: parents,
      children: [{ name: 'failed', queueName: children, opts: OPTION[policy] }, { name: 'other', queueName: children }],
    });
    const childQueue = queue(children);
    const failed = tree.children![0].job;
    const parentKey = queue(parents).keys.job(tree.job.id);
    const k = childQueue.keys;
    const client = newClient();
    closers.push(async () => client.disconnect());
    const now = Date.now();
    await client.multi()
      .lrem(k.wait, 0, failed.id).zadd(k.failed, now, failed.id).hset(k.job(failed.id), 'finishedOn', now, 'failedReason', 'broke')
      .zadd(k.notices, now, failed.id)
      .hset(k.noticeData, failed.id, noticeJson ? noticeJson(parentKey) : JSON.stringify([parentKey, 'failed', 'broke', policy]))
      .exec();
    expect(await tree.job.getState()).toBe('waiting-children');
    return { tree, failed, childKey: k.job(failed.id), client, childQueue };
  }

  it('with failParentOnFailure: the parent still fails (the failure notice is kept, not replaced)', async () => {
    const f = await failedUnheard('fail');
    await f.failed.remove();
    expect(await f.tree.job.getState()).toBe('failed');
    const parent = await queue(f.tree.job.queueName).getJob(f.tree.job.id);
    expect(parent!.failedReason).toBe(`child ${f.childKey} failed: broke`);
    expect(await f.client.zcard(f.childQueue.keys.notices)).toBe(0);
  });

  it('with failParentOnFailure up two levels: the parent fails, and so does its own parent, with no worker anywhere', async () => {
    // G <- P (failParentOnFailure) <- C (failParentOnFailure); C failed for good, its notice not
    // delivered. The removal fails P, which writes its own notice for G: delivered at once too.
    const [grands, parents, children] = [uniqueQueueName('grand'), uniqueQueueName('parents'), uniqueQueueName('children')];
    const tree = await producer().add({
      name: 'g', queueName: grands,
      children: [{
        name: 'p', queueName: parents, opts: { failParentOnFailure: true },
        children: [{ name: 'c', queueName: children, opts: { failParentOnFailure: true } }],
      }],
    });
    const [parentQueue, childQueue] = [queue(parents), queue(children)];
    const p = tree.children![0].job;
    const c = tree.children![0].children![0].job;
    const k = childQueue.keys;
    const client = newClient();
    closers.push(async () => client.disconnect());
    const now = Date.now();
    await client.multi()
      .lrem(k.wait, 0, c.id).zadd(k.failed, now, c.id).hset(k.job(c.id), 'finishedOn', now, 'failedReason', 'broke')
      .zadd(k.notices, now, c.id).hset(k.noticeData, c.id, JSON.stringify([parentQueue.keys.job(p.id), 'failed', 'broke', 'fail']))
      .exec();
    await c.remove();
    expect(await p.getState()).toBe('failed');
    expect(await tree.job.getState()).toBe('failed');
    const g = await queue(grands).getJob(tree.job.id);
    expect(g!.failedReason).toBe(`child ${parentQueue.keys.job(p.id)} failed: child ${k.job(c.id)} failed: broke`);
    // One key a call: the queues are in different slots (the cluster run).
    expect(await Promise.all([k.notices, parentQueue.keys.notices, parentQueue.keys.noticeData].map((key) => client.exists(key)))).toEqual([0, 0, 0]);
  });

  it('with ignore, continue or remove: the parent hears the failure under the child\'s policy', async () => {
    const ignore = await failedUnheard('ignore');
    await ignore.failed.remove();
    expect(await ignore.tree.job.getDependencies()).toMatchObject({ ignored: { [ignore.childKey]: 'broke' }, failed: [] });
    expect(await ignore.tree.job.getState()).toBe('waiting-children');

    const cont = await failedUnheard('continue');
    await cont.failed.remove();
    expect(await cont.tree.job.getState()).toBe('waiting'); // started by the failure, the other child still to run
    expect((await cont.tree.job.getDependencies()).failed).toEqual([cont.childKey]);

    const remove = await failedUnheard('remove');
    await remove.failed.remove();
    expect(await remove.tree.job.getDependenciesCount()).toEqual({ processed: 0, unprocessed: 1, failed: 0, ignored: 0 });
  });

  it('with no policy: the removal replaces the failure, and the parent stops waiting for the child', async () => {
    const f = await failedUnheard('');
    await f.failed.remove();
    expect(await f.tree.job.getDependenciesCount()).toEqual({ processed: 0, unprocessed: 1, failed: 0, ignored: 0 });
    expect(await f.client.zcard(f.childQueue.keys.notices)).toBe(0);
  });

  it('a notice that is no notice (bad JSON, JSON of another kind) raises no script error: the removal\'s own notice replaces it', async () => {
    for (const bad of ['{not json', '5', '{"0":"x"}', '["emq:{x}:1","failed"]']) {
      const f = await failedUnheard('fail', () => bad);
      await f.failed.remove();
      expect({ bad, state: await f.childQueue.getJob(f.failed.id) }).toEqual({ bad, state: undefined });
      // Its parent dropped it (removed, the only word it could get) and waits for the other child.
      expect({ bad, counts: await f.tree.job.getDependenciesCount() }).toEqual({ bad, counts: { processed: 0, unprocessed: 1, failed: 0, ignored: 0 } });
      expect(await f.client.hlen(f.childQueue.keys.noticeData)).toBe(0);
    }
  });
});

describe('removeJob-14\'s expected parent (ARGV[6])', () => {
  it('removes a job only while it is the child of the parent the caller names; otherwise answers reparented and changes nothing', async () => {
    const f = await twoLevels(2);
    const client = newClient();
    closers.push(async () => client.disconnect());
    const control = new JobControlScripts(client, f.childQueue.keys, 1000);
    const second = f.tree.children![1].job;
    const other = f.parentQueue.keys.job('someone-else');
    expect(await control.removeJob(second.id, { children: true, notifyParent: true, expectedParent: other })).toEqual({ outcome: 'reparented', children: [] });
    expect(await second.getState()).toBe('waiting');
    expect((await f.tree.job.getDependenciesCount()).unprocessed).toBe(2);
    // Not a child at all: the same.
    const plain = await f.childQueue.add('plain', {});
    expect((await control.removeJob(plain.id, { children: false, notifyParent: true, expectedParent: other })).outcome).toBe('reparented');
    // The right parent: removed.
    const removed = await control.removeJob(second.id, { children: true, notifyParent: false, expectedParent: f.parentQueue.keys.job(f.tree.job.id) });
    expect(removed.outcome).toBe('removed');
    expect(await f.childQueue.getJob(second.id)).toBeUndefined();
  });

  it('a removed parent leaves a job its dependencies name that is another parent\'s child now', async () => {
    const [parents, children] = [uniqueQueueName('parents'), uniqueQueueName('children')];
    const flow = producer();
    const first = await flow.add({ name: 'first', queueName: parents, children: [{ name: 'c', queueName: children, opts: { jobId: 'shared' } }] });
    const childQueue = queue(children);
    // The child was removed and added again under another parent, while the first parent (which
    // a remove read before that) still names it: what a removal in flight sees.
    await childQueue.remove('shared', { removeChildren: false });
    const second = await flow.add({ name: 'second', queueName: parents, children: [{ name: 'c', queueName: children, opts: { jobId: 'shared' } }] });
    const client = newClient();
    closers.push(async () => client.disconnect());
    await client.sadd(queue(parents).keys.flow(first.job.id, 'dependencies'), childQueue.keys.job('shared'));
    await first.job.remove();
    const kept = await childQueue.getJob('shared');
    expect(kept?.parentKey).toBe(queue(parents).keys.job(second.job.id));
    expect(await second.job.getDependenciesCount()).toEqual({ processed: 0, unprocessed: 1, failed: 0, ignored: 0 });
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

  it('obliterate leaves no key of the queue: not even the flow keys of a parent a plain job\'s count rule removed', async () => {
    const [parents, children] = [uniqueQueueName('parents'), uniqueQueueName('children')];
    const tree = await producer().add({ name: 'parent', queueName: parents, children: [{ name: 'child', queueName: children }] });
    const parentQueue = queue(parents);
    worker(children, async () => 'value');
    const done: string[] = [];
    const w = worker(parents, async (job) => void done.push(job.id));
    await finished(parentQueue, tree.job.id);
    // A plain job that keeps only itself: its finish (moveToFinished-14, fixed) trims the parent's hash, not its flow keys.
    const plain = await parentQueue.add('plain', {}, { removeOnComplete: 1 });
    await finished(parentQueue, plain.id);
    await w.close();
    expect(await parentQueue.getJob(tree.job.id)).toBeUndefined();
    const client = newClient();
    try {
      expect(await scanKeys(client, `${parentQueue.keys.job(tree.job.id)}:*`)).toEqual([parentQueue.keys.flow(tree.job.id, 'processed')]);
      await parentQueue.obliterate();
      expect(await scanKeys(client, `${parentQueue.keys.base}*`)).toEqual([]);
    } finally {
      client.disconnect();
    }
  });
});
