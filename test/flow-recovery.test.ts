import { describe, expect, it } from '@jest/globals';
import { FlowScripts } from '../lib/protocol/flow-scripts.js';
import { Keys } from '../lib/protocol/keys.js';
import { planFlow } from '../lib/runtime/flows/flow-tree.js';
import { FlowRecovery } from '../lib/runtime/flows/flow-recovery.js';
import { FlowProducer, Worker, type Job, type ProcessorFunction } from '../lib/index.js';
import { eventually, testConnection, uniqueQueueName } from './support/redis.js';
import { closers, finished, queue, redis, worker } from './support/test-resources.js';

// Flow recovery (docs/protocol.md, "Flows: recovery"): what a dead producer or a dead worker left
// behind is made whole by the workers' sweeps, so that no parent waits for ever.

const hang: ProcessorFunction = () => new Promise(() => undefined);
const MINUTE_AGO = () => Date.now() - 60_000;

describe('a producer that died after writing a parent', () => {
  it('leaves an intent that a worker of the parent queue rolls forward: the children are made, the parent completes', async () => {
    const [parents, children, grandchildren] = [uniqueQueueName('parents'), uniqueQueueName('children'), uniqueQueueName('grand')];
    const root = planFlow({
      name: 'parent', queueName: parents,
      children: [
        { name: 'a', queueName: children, data: { n: 1 } },
        { name: 'b', queueName: children, data: { n: 2 } },
        // A child with children of its own: its intent is rolled forward in its own queue.
        { name: 'c', queueName: children, data: { n: 3 }, children: [{ name: 'g', queueName: grandchildren, data: { n: 4 } }] },
      ],
    }, 'emq', undefined);
    // What a producer killed after its first call leaves: the root, its intent written a minute ago.
    const client = redis();
    const parentKeys = new Keys(parents, 'emq');
    expect(await new FlowScripts(client, parentKeys, 10_000).addFlowJobs([root.record], MINUTE_AGO())).toEqual(['added']);
    const childQueue = queue(children);
    expect(await childQueue.count()).toBe(0);

    // A short stalledInterval: the children queue's sweep (which rolls c's intent forward) comes every 300 ms.
    worker(children, async (job) => (job.data as { n: number }).n + Object.values(await job.getChildrenValues<number>()).reduce((a, b) => a + b, 0), { stalledInterval: 300 });
    worker(grandchildren, async (job) => (job.data as { n: number }).n);
    worker(parents, async (job) => Object.values(await job.getChildrenValues<number>()).reduce((a, b) => a + b, 0));
    // The roll-forward of the root ran at the parent worker's first sweep; that of `c` comes once its intent is past the grace.
    await eventually(async () => (await client.zcard(parentKeys.flowPending)) === 0, 5000, 'the root intent rolled forward');
    expect(await client.exists(parentKeys.flow(root.record.id, 'pending'))).toBe(0);
    const c = root.children[2];
    // Backdate c's intent (the sweep made it just now) rather than wait out the 10 s grace.
    await client.zadd(new Keys(children, 'emq').flowPending, MINUTE_AGO(), c.record.id);
    const parent = await finished(queue(parents), root.record.id, 40_000);
    expect(parent.returnvalue).toBe(1 + 2 + (3 + 4));
    expect(await client.zcard(new Keys(children, 'emq').flowPending)).toBe(0);
  }, 50_000);

  it('lets a child whose spec cannot be read go, said once, and makes the rest: the parent completes', async () => {
    const [parents, children] = [uniqueQueueName('parents'), uniqueQueueName('children')];
    const root = planFlow({
      name: 'parent', queueName: parents,
      children: [{ name: 'a', queueName: children, data: { n: 1 } }, { name: 'b', queueName: children, data: { n: 2 } }],
    }, 'emq', undefined);
    const client = redis();
    const parentKeys = new Keys(parents, 'emq');
    expect(await new FlowScripts(client, parentKeys, 10_000).addFlowJobs([root.record], MINUTE_AGO())).toEqual(['added']);
    // b's spec damaged in the intent (a runtime's bug, a hand edit): it could never be made.
    const bKey = new Keys(children, 'emq').job(root.children[1].record.id);
    await client.hset(parentKeys.flow(root.record.id, 'pending'), bKey, '{"queueName":');

    worker(children, async (job) => (job.data as { n: number }).n);
    const errors: Error[] = [];
    const parentWorker = new Worker(parents, async (job) => job.getChildrenValues(), { connection: testConnection() });
    parentWorker.on('error', (error) => errors.push(error));
    closers.push(() => parentWorker.close(true));
    const parent = await finished(queue(parents), root.record.id, 20_000);
    expect(await parent.getState()).toBe('completed');
    expect(Object.values(parent.returnvalue as Record<string, number>)).toEqual([1]);
    expect(errors.map((error) => error.message)).toEqual([
      `EchoMQ: flow recovery: the intent of parent ${parentKeys.job(root.record.id)} holds an unreadable spec for ${bKey}; the parent goes on without it`,
    ]);
    expect(await client.zcard(parentKeys.flowPending)).toBe(0);
    expect(await client.exists(parentKeys.flow(root.record.id, 'pending'))).toBe(0);
  }, 30_000);

  it('a second roll-forward of an intent already made changes nothing (idempotent)', async () => {
    const [parents, children] = [uniqueQueueName('parents'), uniqueQueueName('children')];
    const root = planFlow({ name: 'p', queueName: parents, children: [{ name: 'a', queueName: children }] }, 'emq', undefined);
    const client = redis();
    const keys = new Keys(parents, 'emq');
    const scripts = new FlowScripts(client, keys, 10_000);
    await scripts.addFlowJobs([root.record], MINUTE_AGO());
    // The producer made the child but died before its acknowledgement.
    expect(await new FlowScripts(client, new Keys(children, 'emq'), 10_000).addFlowJobs([root.children[0].record], Date.now())).toEqual(['added']);
    worker(parents, async () => 'done');
    await eventually(async () => (await client.zcard(keys.flowPending)) === 0, 5000, 'the intent acknowledged');
    expect(await queue(children).count()).toBe(1);
  });
});

describe('a child failed by the stalled sweep', () => {
  async function stallingChild(opts: Record<string, unknown>) {
    const [parents, children] = [uniqueQueueName('parents'), uniqueQueueName('children')];
    const flow = new FlowProducer({ connection: testConnection() });
    closers.push(() => flow.close());
    const tree = await flow.add({ name: 'parent', queueName: parents, children: [{ name: 'stuck', queueName: children, opts }] });
    // Its lock lapses while the handler hangs (renewals 10 minutes apart), as a dead worker's would.
    worker(children, hang, { lockDuration: 300, unsafeLockRenewTime: 600_000, stalledInterval: 200, maxStalledCount: 0 });
    const child = tree.children![0].job;
    const childQueue = queue(children);
    await eventually(async () => (await childQueue.getJob(child.id))?.failedReason, 10_000, 'the child failed by stalling');
    return { tree, child, children, parentQueue: queue(parents), childQueue };
  }

  it('with failParentOnFailure fails the parent', async () => {
    const f = await stallingChild({ failParentOnFailure: true });
    const parent = await finished(f.parentQueue, f.tree.job.id);
    expect(await parent.getState()).toBe('failed');
    expect(parent.failedReason).toBe(`child emq:{${f.children}}:${f.child.id} failed: job stalled more than allowable limit`);
    expect(await redis().zcard(f.childQueue.keys.notices)).toBe(0);
  });

  it('with no policy shows it under failed, the parent waiting', async () => {
    const f = await stallingChild({});
    const key = `emq:{${f.children}}:${f.child.id}`;
    await eventually(async () => (await f.tree.job.getDependencies()).failed.length === 1, 5000, 'the parent heard');
    expect(await f.tree.job.getDependencies()).toEqual({ processed: {}, unprocessed: [], failed: [key], ignored: {} });
    expect(await f.tree.job.getState()).toBe('waiting-children');
  });
});

describe('the backstop', () => {
  it('settles children a dead worker left finished without a notice, and lets go of a child that is gone', async () => {
    const [parents, children] = [uniqueQueueName('parents'), uniqueQueueName('children')];
    const flow = new FlowProducer({ connection: testConnection() });
    closers.push(() => flow.close());
    const tree = await flow.add({
      name: 'parent', queueName: parents,
      children: [
        { name: 'failed', queueName: children, opts: { ignoreDependencyOnFailure: true } },
        { name: 'completed', queueName: children },
        { name: 'gone', queueName: children },
      ],
    });
    const [failed, completed, gone] = tree.children!.map((c) => c.job);
    const client = redis();
    const k = new Keys(children, 'emq');
    const now = Date.now();
    // What the stalled sweep leaves (and a worker dead before the notice), a finish whose notice
    // was lost, and a job deleted under the flow.
    await client.multi()
      .lrem(k.wait, 0, failed.id).zadd(k.failed, now, failed.id).hset(k.job(failed.id), 'finishedOn', now, 'failedReason', 'job stalled more than allowable limit')
      .lrem(k.wait, 0, completed.id).zadd(k.completed, now, completed.id).hset(k.job(completed.id), 'finishedOn', now, 'returnvalue', '{"v":42}')
      .lrem(k.wait, 0, gone.id).del(k.job(gone.id))
      .exec();
    const parentQueue = queue(parents);
    worker(parents, async () => 'ran');
    // Not before the grace: a parent that began to wait just now is left alone.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await tree.job.getState()).toBe('waiting-children');
    expect(await tree.job.getDependenciesCount()).toEqual({ processed: 0, unprocessed: 3, failed: 0, ignored: 0 });
    // Past it (backdated): the next sweep settles all three.
    await client.zadd(parentQueue.keys.waitingChildren, 'XX', MINUTE_AGO(), tree.job.id);
    const w2 = worker(parents, async () => 'ran');
    expect(w2).toBeDefined();
    const parent = await finished(parentQueue, tree.job.id);
    expect(parent.returnvalue).toBe('ran');
    expect(await parent.getDependencies()).toEqual({
      processed: { [k.job(completed.id)]: { v: 42 } }, unprocessed: [], failed: [],
      ignored: { [k.job(failed.id)]: 'job stalled more than allowable limit' },
    });
  });
});

describe('the backstop and children deleted under a flow (docs/flows.md, "Removing jobs of a flow")', () => {
  /** A parent with children `a` and `b` in their own queue; `b` has `opts`. No workers yet. */
  async function parentOfTwo(opts: Record<string, unknown> = {}) {
    const [parents, children] = [uniqueQueueName('parents'), uniqueQueueName('children')];
    const flow = new FlowProducer({ connection: testConnection() });
    closers.push(() => flow.close());
    const tree = await flow.add({
      name: 'parent', queueName: parents,
      children: [{ name: 'a', queueName: children, opts: { jobId: 'a' } }, { name: 'b', queueName: children, opts: { jobId: 'b', ...opts } }],
    });
    return { tree, parents, children, parentQueue: queue(parents), childQueue: queue(children), client: redis() };
  }

  /** The parent's wait backdated past the grace, and a worker of its queue sweeping often: the backstop's next pass. */
  async function backstopRuns(f: Awaited<ReturnType<typeof parentOfTwo>>): Promise<Job> {
    await f.client.zadd(f.parentQueue.keys.waitingChildren, 'XX', MINUTE_AGO(), f.tree.job.id);
    worker(f.parents, async (job) => job.getDependencies(), { stalledInterval: 200 });
    return finished(f.parentQueue, f.tree.job.id);
  }

  const nothing = { processed: {}, unprocessed: [], failed: [], ignored: {} };

  it('drained children: the parent is not told at once; past the grace the backstop lets it go on without them', async () => {
    const f = await parentOfTwo();
    await f.childQueue.drain();
    expect(await f.tree.job.getDependenciesCount()).toMatchObject({ unprocessed: 2 });
    const parent = await backstopRuns(f);
    expect(parent.returnvalue).toEqual(nothing);
  });

  it('cleaned children: the same', async () => {
    const f = await parentOfTwo();
    expect((await f.childQueue.clean(0, 0, 'wait')).sort()).toEqual(['a', 'b']);
    const parent = await backstopRuns(f);
    expect(parent.returnvalue).toEqual(nothing);
  });

  it('an obliterated queue with a completion notice not delivered: the parent goes on without that child, its value lost', async () => {
    const f = await parentOfTwo();
    const k = f.childQueue.keys;
    const now = Date.now();
    // `a` completed, its worker died before the settle: its notice waits in the queue obliterated next.
    await f.client.multi().lrem(k.wait, 0, 'a').zadd(k.completed, now, 'a').hset(k.job('a'), 'finishedOn', now, 'returnvalue', '"A"')
      .zadd(k.notices, now, 'a').hset(k.noticeData, 'a', JSON.stringify([f.parentQueue.keys.job(f.tree.job.id), 'completed', '"A"', '']))
      .exec();
    await f.childQueue.obliterate({ force: true });
    const parent = await backstopRuns(f);
    expect(parent.returnvalue).toEqual(nothing);
  });

  it('a child with no policy removed by removeOnFail: let go at once (its notice says remove), with no backstop: the parent runs', async () => {
    const f = await parentOfTwo({ removeOnFail: true });
    worker(f.children, async (job) => {
      if (job.id === 'b') throw new Error('broke');
      return 'A';
    });
    // No backdating: the parent's worker starts now, and the backstop's grace (10 s) is not over.
    worker(f.parents, async (job) => job.getDependencies());
    const parent = await finished(f.parentQueue, f.tree.job.id, 5000);
    expect(await f.childQueue.getJob('b')).toBeUndefined();
    expect(parent.returnvalue).toEqual({ ...nothing, processed: { [f.childQueue.keys.job('a')]: 'A' } });
  });
});

describe('the roll-forward of a big intent', () => {
  it('makes all 10,000 children of a dead producer\'s parent, 200 a call (HSCAN from 0 would stall once the front of the hash emptied)', async () => {
    const [parents, children] = [uniqueQueueName('parents'), uniqueQueueName('children')];
    const root = planFlow({ name: 'p', queueName: parents, children: Array.from({ length: 10_000 }, (_, i) => ({ name: 'c', queueName: children, data: { i } })) }, 'emq', undefined);
    const client = redis();
    const parentKeys = new Keys(parents, 'emq');
    await new FlowScripts(client, parentKeys, 10_000).addFlowJobs([root.record], MINUTE_AGO());
    const errors: Error[] = [];
    const recovery = new FlowRecovery(client, parentKeys, 10_000, { settle: async () => 0 }, (error) => errors.push(error));
    let calls = 0;
    while ((await client.zcard(parentKeys.flowPending)) > 0 && calls < 100) {
      await recovery.rollForward();
      calls++;
    }
    expect(errors).toEqual([]);
    expect(await client.exists(parentKeys.flow(root.record.id, 'pending'))).toBe(0);
    expect(await queue(children).count()).toBe(10_000);
    expect(calls).toBeGreaterThanOrEqual(50); // 200 specs a call, and no call stuck on nothing
    expect(calls).toBeLessThan(100);
  });
});
