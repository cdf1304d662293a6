import { afterAll, describe, expect, it } from '@jest/globals';
import { Worker, type FlowJob, type Job } from '../lib/index.js';
import { JobControlScripts } from '../lib/internal.js';
import { closers, producer, queue, worker } from './support/test-resources.js';
import { eventually, newClient, scanKeys, testConnection, uniqueQueueName } from './support/redis.js';

// A child of a flow that fails outside a worker's finish (queue.cancelJob), or is removed at its
// failure, tells its parent at once, as a finish does: no parent waits for the flow sweep's
// backstop (10 to 40 s, and only while a worker serves the child's queue). A cancelled parent
// takes its flow keys with it when removed (docs/flows.md, docs/protocol.md "Cancelling jobs").

const client = newClient();
afterAll(() => client.quit());

/** Well inside the backstop's 10 s: a parent told by a notice moves within a round trip or two. */
const AT_ONCE_MS = 2000;

async function stateWithin(job: Job, state: string, ms = AT_ONCE_MS): Promise<void> {
  await eventually(async () => (await job.getState()) === state, ms, `job ${job.id} ${state}`);
}

/** A parent in `parents` with one child in `children` (its opts given), and a sibling that waits. */
async function family(childOpts: FlowJob['opts'], withSibling = false) {
  const [parents, children] = [uniqueQueueName('parents'), uniqueQueueName('children')];
  const tree = await producer().add({
    name: 'parent', queueName: parents,
    children: [
      { name: 'child', queueName: children, opts: childOpts },
      ...(withSibling ? [{ name: 'sibling', queueName: children, opts: { delay: 60_000 } }] : []),
    ],
  });
  return { parents, children, parentQueue: queue(parents), childQueue: queue(children), parent: tree.job, child: tree.children![0].job };
}

describe('queue.cancelJob of a child of a flow tells its parent at once', () => {
  it('failParentOnFailure: the waiting parent fails, naming the child and the cancel', async () => {
    const f = await family({ failParentOnFailure: true });
    expect(await f.childQueue.cancelJob(f.child.id, 'not wanted')).toBe(true);
    await stateWithin(f.parent, 'failed');
    const parent = (await f.parentQueue.getJob(f.parent.id))!;
    expect(parent.failedReason).toBe(`child ${f.childQueue.keys.job(f.child.id)} failed: job ${f.child.id} was cancelled: not wanted`);
    expect(await client.zcard(f.childQueue.keys.notices)).toBe(0); // delivered and acked
  });

  it('ignoreDependencyOnFailure: the parent goes on at once, the cancel among its ignored', async () => {
    const f = await family({ ignoreDependencyOnFailure: true });
    expect(await f.childQueue.cancelJob(f.child.id)).toBe(true);
    await stateWithin(f.parent, 'waiting');
    const parent = (await f.parentQueue.getJob(f.parent.id))!;
    expect(await parent.getDependencies()).toEqual({
      processed: {}, unprocessed: [], failed: [], ignored: { [f.childQueue.keys.job(f.child.id)]: `job ${f.child.id} was cancelled` },
    });
    // BullMQ's readers of the same record.
    expect(await parent.getIgnoredChildrenFailures()).toEqual({ [f.childQueue.keys.job(f.child.id)]: `job ${f.child.id} was cancelled` });
    expect(await parent.getFailedChildrenValues()).toEqual(await parent.getIgnoredChildrenFailures());
  });

  it('failParentOnFailure with removeOnFail: true: the parent fails; it never runs nor completes', async () => {
    const f = await family({ failParentOnFailure: true, removeOnFail: true, delay: 60_000 });
    const ran: string[] = [];
    worker(f.parents, async (job) => void ran.push(job.id));
    expect(await f.childQueue.cancelJob(f.child.id)).toBe(true);
    await stateWithin(f.parent, 'failed');
    expect(await f.childQueue.getJob(f.child.id)).toBeUndefined();
    expect(ran).toEqual([]);
  });

  it('no policy, removeOnFail: true: a removed child is no failure, so the parent goes on without it', async () => {
    const f = await family({ removeOnFail: true });
    expect(await f.childQueue.cancelJob(f.child.id)).toBe(true);
    await stateWithin(f.parent, 'waiting');
    expect(await f.parentQueue.getJob(f.parent.id).then((p) => p!.getDependenciesCount())).toEqual({ processed: 0, unprocessed: 0, failed: 0, ignored: 0 });
  });

  it('no policy, kept in failed: the parent waits for it (a retry that completes settles it), as for a failure at a finish', async () => {
    const f = await family({}, true);
    expect(await f.childQueue.cancelJob(f.child.id)).toBe(true);
    await eventually(async () => (await f.parent.getDependenciesCount()).failed === 1, AT_ONCE_MS, 'the failure recorded');
    expect(await f.parent.getState()).toBe('waiting-children');
    expect(await f.parent.getDependenciesCount()).toEqual({ processed: 0, unprocessed: 1, failed: 1, ignored: 0 });
  });
});

describe('a canceller that dies between cancelJob-12 and the delivery of its notice', () => {
  it('leaves the notice, which a worker of the child queue delivers at its sweep: the parent fails', async () => {
    const f = await family({ failParentOnFailure: true, delay: 60_000 });
    // The script alone, as a process that died right after it would leave things.
    const control = new JobControlScripts(client, f.childQueue.keys, 10_000);
    expect(await control.cancelJob(f.child.id, 'gone', Date.now(), -1, 0)).toBe('failed-notice');
    expect(await client.zcard(f.childQueue.keys.notices)).toBe(1);
    expect(await f.parent.getState()).toBe('waiting-children');
    const w = new Worker(f.children, async () => 'never', { connection: testConnection(), stalledInterval: 500 });
    closers.push(() => w.close(true));
    await stateWithin(f.parent, 'failed', 5000);
    expect(await client.zcard(f.childQueue.keys.notices)).toBe(0);
  });
});

describe('a child that fails at its finish with no policy and removeOnFail: true', () => {
  it('lets its parent go on at once, as BullMQ does, instead of after the backstop', async () => {
    const f = await family({ removeOnFail: true });
    const ran: string[] = [];
    worker(f.children, async () => { throw new Error('broke'); });
    worker(f.parents, async (job) => void ran.push(job.id));
    await eventually(async () => ran.length === 1, AT_ONCE_MS + 1000, 'the parent ran');
    expect(ran).toEqual([f.parent.id]);
    expect(await f.childQueue.getJob(f.child.id)).toBeUndefined();
  });
});

describe('a parent failed by a failParentOnFailure child keeps to its own removeOnFail', () => {
  for (const [label, removeOnFail] of [['true: removed, with its flow keys', true], ['a count of 1: the older failed parent trimmed', 1]] as const) {
    it(label, async () => {
      const [parents, children] = [uniqueQueueName('parents'), uniqueQueueName('children')];
      const trees = [];
      for (let i = 0; i < 2; i++) {
        trees.push(await producer().add({
          name: 'parent', queueName: parents, opts: { removeOnFail },
          children: [{ name: 'child', queueName: children, opts: { failParentOnFailure: true } }, { name: 'later', queueName: children, opts: { delay: 60_000 } }],
        }));
      }
      const parentQueue = queue(parents);
      const childQueue = queue(children);
      for (const tree of trees) expect(await childQueue.cancelJob(tree.children![0].job.id)).toBe(true);
      if (removeOnFail === true) {
        for (const tree of trees) {
          expect(await parentQueue.getJob(tree.job.id)).toBeUndefined();
          expect(await scanKeys(client, `${parentQueue.keys.job(tree.job.id)}*`)).toEqual([]);
        }
      } else {
        expect(await parentQueue.getJob(trees[0].job.id)).toBeUndefined();
        expect(await (await parentQueue.getJob(trees[1].job.id))!.getState()).toBe('failed');
      }
    });
  }
});

describe('a parent failed by a child and removed by its removeOnFail, itself a child with no policy', () => {
  it('tells its own parent it is gone (policy remove): the grandparent goes on at once', async () => {
    const [top, middle, leaves] = [uniqueQueueName('top'), uniqueQueueName('middle'), uniqueQueueName('leaves')];
    const tree = await producer().add({
      name: 'top', queueName: top,
      children: [{
        name: 'middle', queueName: middle, opts: { removeOnFail: true },
        children: [{ name: 'leaf', queueName: leaves, opts: { failParentOnFailure: true, delay: 60_000 } }],
      }],
    });
    queue(top);
    const middleQueue = queue(middle);
    const leafQueue = queue(leaves);
    expect(await leafQueue.cancelJob(tree.children![0].children![0].job.id)).toBe(true);
    await eventually(async () => (await middleQueue.getJob(tree.children![0].job.id)) === undefined, AT_ONCE_MS, 'the middle parent removed');
    await stateWithin(tree.job, 'waiting');
  });
});

describe('job.removeChildDependency', () => {
  it('the last child leaves: its parent forgets it and goes on; the child runs on, telling no parent', async () => {
    const f = await family({ delay: 60_000 });
    const child = (await f.childQueue.getJob(f.child.id))!;
    expect(await child.removeChildDependency()).toBe(true);
    expect([child.parentKey, child.parent]).toEqual([undefined, undefined]);
    await stateWithin(f.parent, 'waiting');
    expect(await f.parent.getDependenciesCount()).toEqual({ processed: 0, unprocessed: 0, failed: 0, ignored: 0 });
    expect((await f.childQueue.getJob(f.child.id))!.parentKey).toBeUndefined();
    expect(await child.removeChildDependency()).toBe(false); // no parent any more
  });

  it('a child its parent no longer waits for (completed and settled): false, and its link stays', async () => {
    const f = await family({});
    worker(f.children, async () => 'v');
    await eventually(async () => (await f.parent.getDependenciesCount()).processed === 1, AT_ONCE_MS, 'settled');
    const child = (await f.childQueue.getJob(f.child.id))!;
    expect(await child.removeChildDependency()).toBe(false);
    expect((await f.childQueue.getJob(f.child.id))!.parentKey).toBe(f.parentQueue.keys.job(f.parent.id));
  });
});

describe('queue.cancelJob of a parent', () => {
  it('waiting for its children: true, failed as cancelled; a child finishing later changes nothing', async () => {
    const f = await family({}, true);
    expect(await f.parentQueue.cancelJob(f.parent.id, 'stop')).toBe(true);
    const parent = (await f.parentQueue.getJob(f.parent.id))!;
    expect(await parent.getState()).toBe('failed');
    expect(parent.failedReason).toBe(`job ${f.parent.id} was cancelled: stop`);
    expect(await f.parentQueue.getJobCounts('waiting-children', 'failed')).toEqual({ 'waiting-children': 0, failed: 1 });
    const done: string[] = [];
    worker(f.children, async (job) => void done.push(job.id));
    await eventually(async () => done.length === 1, AT_ONCE_MS, 'the child ran');
    await eventually(async () => (await client.zcard(f.childQueue.keys.notices)) === 0, AT_ONCE_MS, 'its notice delivered');
    expect(await (await f.parentQueue.getJob(f.parent.id))!.getState()).toBe('failed');
  });

  it('with removeOnFail: true, removed with every flow key of its own', async () => {
    const [parents, children] = [uniqueQueueName('parents'), uniqueQueueName('children')];
    const tree = await producer().add({
      name: 'parent', queueName: parents, opts: { removeOnFail: true },
      children: [{ name: 'child', queueName: children }, { name: 'later', queueName: children, opts: { delay: 60_000 } }],
    });
    const parentQueue = queue(parents);
    queue(children);
    const w = worker(children, async () => 'value');
    await eventually(async () => (await tree.job.getDependenciesCount()).processed === 1, AT_ONCE_MS + 1000, 'one child processed');
    await w.close();
    expect(await scanKeys(client, `${parentQueue.keys.job(tree.job.id)}:*`)).not.toEqual([]);
    expect(await parentQueue.cancelJob(tree.job.id)).toBe(true);
    expect(await parentQueue.getJob(tree.job.id)).toBeUndefined();
    expect(await scanKeys(client, `${parentQueue.keys.job(tree.job.id)}*`)).toEqual([]);
  });
});
