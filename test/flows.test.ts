import { describe, expect, it } from '@jest/globals';
import { eventually, newClient, uniqueQueueName } from './support/redis.js';
import { finished, producer, queue, worker } from './support/test-resources.js';

// Flows (docs/flows.md): parents that run once their children have finished, across queues (each
// its own hash slot, so on the cluster run a parent and its children are on different nodes).

describe('FlowProducer.add', () => {
  it('keeps the parent in waiting-children until its children complete, then runs it with their values', async () => {
    const [parents, children] = [uniqueQueueName('parents'), uniqueQueueName('children')];
    const flow = producer();
    const tree = await flow.add({
      name: 'assemble', queueName: parents, data: { doc: 7 },
      children: [1, 2, 3].map((page) => ({ name: 'render', queueName: children, data: { page } })),
    });
    const parentQueue = queue(parents);
    const childQueue = queue(children);
    expect(await tree.job.getState()).toBe('waiting-children');
    expect(await parentQueue.getJobCounts('waiting-children', 'wait')).toEqual({ 'waiting-children': 1, wait: 0 });
    expect(await tree.job.getDependenciesCount()).toEqual({ processed: 0, unprocessed: 3, failed: 0, ignored: 0 });
    expect(tree.children).toHaveLength(3);
    for (const child of tree.children!) {
      expect(child.job.parent).toEqual({ id: tree.job.id, queueKey: `emq:{${parents}}` });
      expect(await child.job.getState()).toBe('waiting');
    }
    const stored = await childQueue.getJob(tree.children![0].job.id);
    expect(stored?.parentKey).toBe(`emq:{${parents}}:${tree.job.id}`);

    let seen: Record<string, unknown> | undefined;
    worker(parents, async (job) => {
      seen = await job.getChildrenValues();
      return 'pdf';
    });
    worker(children, async (job) => ({ page: (job.data as { page: number }).page }));
    const parent = await finished(parentQueue, tree.job.id);
    expect(parent.returnvalue).toBe('pdf');
    expect(seen).toEqual(Object.fromEntries(tree.children!.map((c) => [`emq:{${children}}:${c.job.id}`, { page: (c.job.data as { page: number }).page }])));
    expect(await parent.getDependencies()).toEqual({ processed: seen, unprocessed: [], failed: [], ignored: {} });
    // The notices were delivered and deleted; the intent was cleared.
    const client = newClient();
    try {
      expect(await client.zcard(childQueue.keys.notices)).toBe(0);
      expect(await client.zcard(parentQueue.keys.flowPending)).toBe(0);
      expect(await client.exists(parentQueue.keys.flow(tree.job.id, 'pending'))).toBe(0);
    } finally {
      client.disconnect();
    }
  });

  it('runs a tree three levels deep over three queues bottom-up, each parent once', async () => {
    const [top, middle, leaves] = [uniqueQueueName('top'), uniqueQueueName('mid'), uniqueQueueName('leaf')];
    const flow = producer();
    const tree = await flow.add({
      name: 'root', queueName: top,
      children: [0, 1].map((m) => ({
        name: 'mid', queueName: middle, data: { m },
        children: [0, 1, 2].map((l) => ({ name: 'leaf', queueName: leaves, data: { m, l } })),
      })),
    });
    const order: string[] = [];
    worker(leaves, async (job) => {
      const { m, l } = job.data as { m: number; l: number };
      order.push(`leaf ${m}.${l}`);
      return m * 10 + l;
    }, { concurrency: 3 });
    worker(middle, async (job) => {
      const values = Object.values(await job.getChildrenValues<number>());
      order.push(`mid ${(job.data as { m: number }).m}`);
      return values.reduce((a, b) => a + b, 0);
    });
    worker(top, async (job) => {
      order.push('root');
      return Object.values(await job.getChildrenValues<number>()).reduce((a, b) => a + b, 0);
    });
    const root = await finished(queue(top), tree.job.id, 15_000);
    expect(root.returnvalue).toBe(0 + 1 + 2 + 10 + 11 + 12);
    expect(order.filter((o) => o === 'root')).toHaveLength(1);
    expect(order.at(-1)).toBe('root');
    for (const m of [0, 1]) {
      const midAt = order.indexOf(`mid ${m}`);
      for (const l of [0, 1, 2]) expect(order.indexOf(`leaf ${m}.${l}`)).toBeLessThan(midAt);
    }
  });

  it('reads back the results of 1,000 children under one parent', async () => {
    const [parents, children] = [uniqueQueueName('parents'), uniqueQueueName('children')];
    const flow = producer();
    const tree = await flow.add({
      name: 'sum', queueName: parents,
      children: Array.from({ length: 1000 }, (_, i) => ({ name: 'part', queueName: children, data: { i } })),
    });
    worker(children, async (job) => (job.data as { i: number }).i, { concurrency: 50 });
    worker(parents, async (job) => {
      const values = await job.getChildrenValues<number>();
      return { count: Object.keys(values).length, sum: Object.values(values).reduce((a, b) => a + b, 0) };
    });
    const parent = await finished(queue(parents), tree.job.id, 30_000);
    expect(parent.returnvalue).toEqual({ count: 1000, sum: (999 * 1000) / 2 });
  });

  it('refuses a bad tree before writing anything, naming the field', async () => {
    const name = uniqueQueueName('bad');
    const flow = producer();
    await expect(flow.add({ name: 'p', queueName: name, children: [{ name: 'c', queueName: name, opts: { delay: -1 } }] }))
      .rejects.toMatchObject({ name: 'EchoMQOptionError', field: 'flow.children[0].opts.delay' });
    await expect(flow.add({ name: 'p', queueName: name, children: [{ name: '', queueName: name }] }))
      .rejects.toMatchObject({ field: 'flow.children[0].name' });
    await expect(flow.add({ name: 'p', queueName: name, opts: { failParentOnFailure: true } }))
      .rejects.toMatchObject({ field: 'flow.opts.failParentOnFailure' });
    await expect(flow.add({ name: 'p', queueName: name, children: [{ name: 'c', queueName: name, opts: { failParentOnFailure: true, ignoreDependencyOnFailure: true } }] }))
      .rejects.toMatchObject({ field: 'flow.children[0].opts' });
    const client = newClient();
    try {
      expect(await client.exists(`emq:{${name}}:waiting-children`, `emq:{${name}}:wait`, `emq:{${name}}:events`)).toBe(0);
    } finally {
      client.disconnect();
    }
  });
});

describe('a child that fails for good', () => {
  async function failingFlow(opts: Record<string, unknown>) {
    const [parents, children] = [uniqueQueueName('parents'), uniqueQueueName('children')];
    const flow = producer();
    const tree = await flow.add({
      name: 'parent', queueName: parents,
      children: [
        { name: 'ok', queueName: children, data: { fail: false } },
        { name: 'bad', queueName: children, data: { fail: true }, opts },
        { name: 'slow', queueName: children, data: { fail: false, slow: true } },
      ],
    });
    let releaseSlow!: () => void;
    const slowGate = new Promise<void>((resolve) => (releaseSlow = resolve));
    const childQueue = queue(children);
    worker(children, async (job) => {
      const data = job.data as { fail: boolean; slow?: boolean };
      if (data.slow) await slowGate;
      if (data.fail) throw new Error('boom');
      return job.name;
    }, { concurrency: 3 });
    const parentRuns: string[] = [];
    worker(parents, async (job) => {
      parentRuns.push(job.id);
      return 'parent done';
    });
    const [ok, bad, slow] = tree.children!.map((c) => c.job);
    await finished(childQueue, bad.id);
    await finished(childQueue, ok.id);
    return { tree, parentQueue: queue(parents), childQueue, ok, bad, slow, releaseSlow, parentRuns, children };
  }

  it('with no policy leaves the parent waiting, the child shown as failed', async () => {
    const f = await failingFlow({});
    f.releaseSlow();
    await finished(f.childQueue, f.slow.id);
    await eventually(async () => (await f.tree.job.getDependenciesCount()).processed === 2, 5000, 'two processed');
    expect(await f.tree.job.getDependenciesCount()).toEqual({ processed: 2, unprocessed: 0, failed: 1, ignored: 0 });
    expect((await f.tree.job.getDependencies()).failed).toEqual([`emq:{${f.children}}:${f.bad.id}`]);
    expect(await f.tree.job.getState()).toBe('waiting-children');
    expect(f.parentRuns).toEqual([]);
    // A retry that completes settles it: the parent runs.
    await f.childQueue.getJob(f.bad.id).then((job) => job!.updateData({ fail: false }));
    await (await f.childQueue.getJob(f.bad.id))!.retry();
    const parent = await finished(f.parentQueue, f.tree.job.id);
    expect(parent.returnvalue).toBe('parent done');
  });

  it('with failParentOnFailure fails the waiting parent at once, naming the child', async () => {
    const f = await failingFlow({ failParentOnFailure: true });
    const parent = await finished(f.parentQueue, f.tree.job.id);
    expect(await parent.getState()).toBe('failed');
    expect(parent.failedReason).toBe(`child emq:{${f.children}}:${f.bad.id} failed: boom`);
    f.releaseSlow();
    await finished(f.childQueue, f.slow.id);
    expect(f.parentRuns).toEqual([]);
  });

  it('with ignoreDependencyOnFailure lets the parent run, the child listed as ignored', async () => {
    const f = await failingFlow({ ignoreDependencyOnFailure: true });
    expect(await f.tree.job.getState()).toBe('waiting-children');
    f.releaseSlow();
    await finished(f.parentQueue, f.tree.job.id);
    const deps = await f.tree.job.getDependencies();
    expect(deps.ignored).toEqual({ [`emq:{${f.children}}:${f.bad.id}`]: 'boom' });
    expect(Object.keys(deps.processed)).toHaveLength(2);
    expect(f.parentRuns).toEqual([f.tree.job.id]);
  });

  it('with removeDependencyOnFailure lets the parent run, the child forgotten', async () => {
    const f = await failingFlow({ removeDependencyOnFailure: true });
    f.releaseSlow();
    await finished(f.parentQueue, f.tree.job.id);
    expect(await f.tree.job.getDependenciesCount()).toEqual({ processed: 2, unprocessed: 0, failed: 0, ignored: 0 });
  });

  it('with continueParentOnFailure starts the parent at once, while a sibling still runs', async () => {
    const f = await failingFlow({ continueParentOnFailure: true });
    await finished(f.parentQueue, f.tree.job.id);
    expect(await f.slow.getState()).toBe('active');
    expect(f.parentRuns).toEqual([f.tree.job.id]);
    f.releaseSlow();
    await finished(f.childQueue, f.slow.id);
    await eventually(async () => (await f.tree.job.getDependenciesCount()).processed === 2, 5000, 'the late sibling recorded');
  });

  it('with failParentOnFailure up two levels: the grandparent fails too when the parent asks it', async () => {
    const [a, b, c] = [uniqueQueueName('a'), uniqueQueueName('b'), uniqueQueueName('c')];
    const tree = await producer().add({
      name: 'root', queueName: a,
      children: [{ name: 'mid', queueName: b, opts: { failParentOnFailure: true },
        children: [{ name: 'leaf', queueName: c, opts: { failParentOnFailure: true } }] }],
    });
    worker(c, async () => { throw new Error('leaf broke'); });
    const root = await finished(queue(a), tree.job.id);
    expect(root.failedReason).toMatch(/^child emq:\{b-[0-9a-f]+\}:[0-9a-f-]+ failed: child emq:\{c-[0-9a-f]+\}:[0-9a-f-]+ failed: leaf broke$/);
  });
});

describe('adding a flow again, and ids', () => {
  it('a flow added again with the same ids, after its parent was removed at completion, completes again from the finished child', async () => {
    const [parents, children] = [uniqueQueueName('parents'), uniqueQueueName('children')];
    const flow = producer();
    const tree = () => ({
      name: 'order', queueName: parents, opts: { jobId: 'order-1', removeOnComplete: true },
      children: [{ name: 'render', queueName: children, data: { n: 1 }, opts: { jobId: 'order-1-render' } }],
    });
    let runs = 0;
    const seen: Array<Record<string, unknown>> = [];
    worker(children, async () => ++runs);
    const parentDone: string[] = [];
    const w = worker(parents, async (job) => {
      seen.push(await job.getChildrenValues());
      return 'ok';
    });
    w.on('completed', (job) => parentDone.push(job.id));
    await flow.add(tree());
    await eventually(() => parentDone.length === 1, 10_000, 'the first parent completed');
    await flow.add(tree()); // the child is kept and finished: its notice is written again
    await eventually(() => parentDone.length === 2, 10_000, 'the second parent completed');
    expect(runs).toBe(1);
    expect(seen).toEqual([{ [`emq:{${children}}:order-1-render`]: 1 }, { [`emq:{${children}}:order-1-render`]: 1 }]);
  });

  it('an add sent again with the same root id answers the existing root and writes nothing more', async () => {
    const [parents, children] = [uniqueQueueName('parents'), uniqueQueueName('children')];
    const flow = producer();
    const first = await flow.add({ name: 'p', queueName: parents, opts: { jobId: 'root-1' }, children: [{ name: 'c', queueName: children }] });
    const again = await flow.add({ name: 'p', queueName: parents, opts: { jobId: 'root-1' }, children: [{ name: 'c', queueName: children }] });
    expect(again.job.id).toBe(first.job.id);
    expect(await queue(children).getJobCounts('wait')).toEqual({ wait: 1 });
    expect(await first.job.getDependenciesCount()).toEqual({ processed: 0, unprocessed: 1, failed: 0, ignored: 0 });
  });

  it('refuses a child id another job holds before writing anything, naming its path', async () => {
    const [parents, children] = [uniqueQueueName('parents'), uniqueQueueName('children')];
    await queue(children).add('other', {}, { jobId: 'taken' });
    await expect(producer().add({ name: 'p', queueName: parents, children: [{ name: 'ok', queueName: children }, { name: 'c', queueName: children, opts: { jobId: 'taken' } }] }))
      .rejects.toMatchObject({ name: 'EchoMQOptionError', field: 'flow.children[1].opts.jobId' });
    expect(await queue(parents).getJobCounts('waiting-children')).toEqual({ 'waiting-children': 0 });
    expect(await queue(children).getJobCounts('wait')).toEqual({ wait: 1 });
  });

  it('refuses a bad prefix, a repeat and a bad jobId in a tree, naming the path', async () => {
    const name = uniqueQueueName('bad');
    const flow = producer();
    await expect(flow.add({ name: 'p', queueName: name, prefix: 'a{b}' })).rejects.toMatchObject({ field: 'flow.prefix' });
    await expect(flow.add({ name: 'p', queueName: name, children: [{ name: 'c', queueName: name, opts: { repeat: { every: 1000 } } as never }] }))
      .rejects.toMatchObject({ field: 'flow.children[0].opts.repeat' });
    await expect(flow.add({ name: 'p', queueName: name, children: [{ name: 'c', queueName: name, opts: { jobId: 'a:b' } }] }))
      .rejects.toMatchObject({ field: 'flow.children[0].opts.jobId' });
    await expect(flow.add({ name: 'p', queueName: name, opts: 5 as never })).rejects.toMatchObject({ field: 'flow.opts' });
  });

  it('writes a parent of 5,000 children (past what one Lua unpack takes), all of them waited for', async () => {
    const [parents, children] = [uniqueQueueName('parents'), uniqueQueueName('children')];
    const tree = await producer().add({
      name: 'big', queueName: parents,
      children: Array.from({ length: 5000 }, (_, i) => ({ name: 'c', queueName: children, data: { i } })),
    });
    expect(await tree.job.getDependenciesCount()).toEqual({ processed: 0, unprocessed: 5000, failed: 0, ignored: 0 });
    expect(await queue(children).getJobCounts('wait')).toEqual({ wait: 5000 });
    const client = newClient();
    try {
      expect(await client.exists(queue(parents).keys.flow(tree.job.id, 'pending'))).toBe(0);
    } finally {
      client.disconnect();
    }
  });
});

describe('retention of parents', () => {
  it('parents dropped by a count rule take their flow keys with them', async () => {
    const [parents, children] = [uniqueQueueName('parents'), uniqueQueueName('children')];
    const flow = producer();
    worker(children, async () => 1);
    const done: string[] = [];
    const w = worker(parents, async () => 'p');
    w.on('completed', (job) => done.push(job.id));
    const ids: string[] = [];
    for (let n = 0; n < 4; n++) {
      const tree = await flow.add({ name: 'p', queueName: parents, opts: { removeOnComplete: { count: 1 } }, children: [{ name: 'c', queueName: children }] });
      ids.push(tree.job.id);
      await eventually(() => done.length === n + 1, 10_000, `parent ${n} completed`);
    }
    const parentQueue = queue(parents);
    expect(await parentQueue.getJobCounts('completed')).toEqual({ completed: 1 });
    const client = newClient();
    try {
      for (const id of ids.slice(0, 3)) {
        expect(await client.exists(parentQueue.keys.job(id), parentQueue.keys.flow(id, 'processed'), parentQueue.keys.flow(id, 'dependencies'))).toBe(0);
      }
      expect(await client.exists(parentQueue.keys.flow(ids[3], 'processed'))).toBe(1);
    } finally {
      client.disconnect();
    }
  });
});
