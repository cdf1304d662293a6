import { afterEach, describe, expect, it } from '@jest/globals';
import { FlowProducer, Queue, WaitingChildrenError, Worker, type Job, type ProcessorFunction } from '../lib/index.js';
import { eventually, newClient, testConnection, uniqueQueueName } from './support/redis.js';

// Step jobs (docs/flows.md, "Step jobs"): a running job adds children with queue.add(..., { parent })
// and waits for them with job.moveToWaitingChildren, then runs again once they have settled.

const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (closers.length > 0) await closers.pop()!();
});

function queue(name: string, opts: Record<string, unknown> = {}): Queue {
  const q = new Queue(name, { connection: testConnection(), ...opts });
  closers.push(() => q.close());
  return q;
}

function worker(name: string, processor: ProcessorFunction, errors: Error[] = []): Worker {
  const w = new Worker(name, processor, { connection: testConnection() });
  w.on('error', (error) => errors.push(error));
  closers.push(() => w.close(true));
  return w;
}

async function finished(q: Queue, jobId: string, timeoutMs = 10_000): Promise<Job> {
  return eventually<Job | undefined>(async () => {
    const job = await q.getJob(jobId);
    return job?.finishedOn !== undefined ? job : undefined;
  }, timeoutMs, `job ${jobId} of ${q.name} finished`) as Promise<Job>;
}

enum Step { Start, Wait, Finish }

describe('step jobs', () => {
  it('a job adds three children, waits for them, and runs again to read their values (the BullMQ pattern)', async () => {
    const [parents, children] = [uniqueQueueName('steps'), uniqueQueueName('kids')];
    const parentQueue = queue(parents);
    const childQueue = queue(children);
    const errors: Error[] = [];
    const runs: Step[] = [];
    worker(parents, async (job, { token }) => {
      let { step } = job.data as { step: Step };
      runs.push(step);
      while (step !== Step.Finish) {
        if (step === Step.Start) {
          for (const n of [1, 2, 3]) {
            const child = await childQueue.add('square', { n }, { parent: { id: job.id, queue: job.queueQualifiedName } });
            expect(child.parent).toEqual({ id: job.id, queueKey: `emq:{${parents}}` });
          }
          step = Step.Wait;
          await job.updateData({ step });
        } else {
          if (await job.moveToWaitingChildren(token)) throw new WaitingChildrenError();
          step = Step.Finish;
          await job.updateData({ step });
        }
      }
      const values = await job.getChildrenValues<number>();
      return Object.values(values).sort((a, b) => a - b);
    }, errors);
    const job = await parentQueue.add('steps', { step: Step.Start });
    // The children wait for a worker of their own: the parent is in waiting-children meanwhile.
    await eventually(async () => (await job.getState()) === 'waiting-children', 5000, 'the parent waits for its children');
    expect(await job.getDependenciesCount()).toEqual({ processed: 0, unprocessed: 3, failed: 0, ignored: 0 });
    worker(children, async (child) => (child.data as { n: number }).n ** 2, errors);
    const done = await finished(parentQueue, job.id);
    expect(done.returnvalue).toEqual([1, 4, 9]);
    expect(await done.getState()).toBe('completed');
    expect(done.attemptsMade).toBe(1); // the step that waited used no attempt
    expect(runs).toEqual([Step.Start, Step.Wait]);
    expect(errors).toEqual([]);
    const client = newClient();
    try {
      // The intents were cleared, no notice is left, no lock.
      expect(await client.zcard(parentQueue.keys.flowPending)).toBe(0);
      expect(await client.exists(parentQueue.keys.flow(job.id, 'pending'), parentQueue.keys.lock(job.id))).toBe(0);
      expect(await client.zcard(childQueue.keys.notices)).toBe(0);
    } finally {
      client.disconnect();
    }
  });

  it('moveToWaitingChildren answers false when the children have settled, and the job completes in the same run', async () => {
    const [parents, children] = [uniqueQueueName('steps'), uniqueQueueName('kids')];
    const parentQueue = queue(parents);
    const childQueue = queue(children);
    const errors: Error[] = [];
    worker(children, async () => 'child done', errors);
    let answers: boolean[] = [];
    worker(parents, async (job, { token }) => {
      answers.push(await job.moveToWaitingChildren(token)); // no children at all
      const child = await childQueue.add('c', {}, { parent: { id: job.id, queue: job.queueQualifiedName } });
      await finished(childQueue, child.id);
      await eventually(async () => (await job.getDependenciesCount()).processed === 1, 5000, 'the child settled');
      answers.push(await job.moveToWaitingChildren(token));
      return 'parent done';
    }, errors);
    const job = await parentQueue.add('p', {});
    const done = await finished(parentQueue, job.id);
    expect(done.returnvalue).toBe('parent done');
    expect(answers).toEqual([false, false]);
    expect(errors).toEqual([]);
    answers = [];
  });

  it('moveToWaitingChildren is lock-checked: -2 with no lock, -6 with another token, -3 when not active, -1 when gone', async () => {
    const name = uniqueQueueName('steps');
    const q = queue(name);
    const client = newClient();
    try {
      const job = await q.add('p', {});
      await q.add('c', {}, { parent: { id: job.id, queue: job.queueQualifiedName } });
      await expect(job.moveToWaitingChildren('token')).rejects.toMatchObject({ code: -2 });
      await client.set(q.keys.lock(job.id), 'theirs');
      await expect(job.moveToWaitingChildren('mine')).rejects.toMatchObject({ code: -6 });
      await expect(job.moveToWaitingChildren('theirs')).rejects.toMatchObject({ code: -3 }); // in wait, not active
      expect(await job.getState()).toBe('waiting');
      await client.del(q.keys.lock(job.id), q.keys.job(job.id));
      await expect(job.moveToWaitingChildren('theirs')).rejects.toMatchObject({ code: -1 });
      await expect(job.moveToWaitingChildren('')).rejects.toMatchObject({ name: 'EchoMQOptionError', field: 'token' });
    } finally {
      client.disconnect();
    }
  });

  it('a WaitingChildrenError without the move fails the job, saying what was missing', async () => {
    const name = uniqueQueueName('steps');
    const q = queue(name);
    worker(name, async () => { throw new WaitingChildrenError(); });
    const job = await q.add('p', {});
    const done = await finished(q, job.id);
    expect(done.failedReason).toMatch(/did not move job .* to waiting-children first/);
  });

  it('add with a parent: checked before anything is written, refused on a partitioned queue, -1 for a missing parent', async () => {
    const name = uniqueQueueName('steps');
    const q = queue(name);
    const parent = await q.add('p', {});
    await expect(q.add('c', {}, { parent: { id: '', queue: parent.queueQualifiedName } })).rejects.toMatchObject({ name: 'EchoMQOptionError', field: 'add: opts.parent.id' });
    await expect(q.add('c', {}, { parent: { id: parent.id, queue: name } })).rejects.toMatchObject({ field: 'add: opts.parent.queue' });
    await expect(q.add('c', {}, { parent: 'x' as never })).rejects.toMatchObject({ field: 'add: opts.parent' });
    await expect(q.add('c', {}, { failParentOnFailure: true })).rejects.toMatchObject({ field: 'add: opts.failParentOnFailure' });
    await expect(q.add('c', {}, { parent: { id: parent.id, queue: parent.queueQualifiedName }, deduplication: { id: 'd' } }))
      .rejects.toMatchObject({ field: 'add: opts.deduplication' });
    await expect(q.addBulk([{ name: 'c', data: {}, opts: { parent: { id: parent.id, queue: 'nope' } } }])).rejects.toMatchObject({ field: 'addBulk[0]: opts.parent.queue' });
    const partitioned = queue(uniqueQueueName('parts'), { partitions: 2 });
    await expect(partitioned.add('c', {}, { parent: { id: parent.id, queue: parent.queueQualifiedName } })).rejects.toMatchObject({ field: 'add: opts.parent' });
    expect(await q.getJobCounts('wait')).toEqual({ wait: 1 });
    await expect(q.add('c', {}, { parent: { id: 'ghost', queue: parent.queueQualifiedName } })).rejects.toMatchObject({ code: -1 });
    expect(await q.getJobCounts('wait')).toEqual({ wait: 1 });
    expect(await parent.getDependenciesCount()).toEqual({ processed: 0, unprocessed: 0, failed: 0, ignored: 0 });
  });

  it('addBulk mixes children and plain jobs; a child whose id is taken by another job is refused and its dependency undone', async () => {
    const [parents, children] = [uniqueQueueName('steps'), uniqueQueueName('kids')];
    const parentQueue = queue(parents);
    const childQueue = queue(children);
    const parent = await parentQueue.add('p', {});
    const ref = { id: parent.id, queue: parent.queueQualifiedName };
    const added = await childQueue.addBulk([
      { name: 'a', data: 1, opts: { parent: ref } }, { name: 'plain', data: 2 }, { name: 'b', data: 3, opts: { parent: ref, jobId: 'b' } },
    ]);
    expect(added.map((j) => [j.name, j.parent?.id])).toEqual([['a', parent.id], ['plain', undefined], ['b', parent.id]]);
    // Again with the same id: the same child, nothing new.
    const again = await childQueue.add('b', 3, { parent: ref, jobId: 'b' });
    expect(again.id).toBe('b');
    await childQueue.add('other', {}, { jobId: 'taken' });
    await expect(childQueue.add('c', {}, { parent: ref, jobId: 'taken' })).rejects.toMatchObject({ field: 'add: opts.jobId' });
    expect((await parent.getDependencies()).unprocessed.sort()).toEqual([`emq:{${children}}:${added[0].id}`, `emq:{${children}}:b`].sort());
  });

  it('addBulk with parents checks every entry in Redis first: one that cannot be added writes nothing at all', async () => {
    const [parents, children] = [uniqueQueueName('steps'), uniqueQueueName('kids')];
    const parentQueue = queue(parents);
    const childQueue = queue(children);
    const parent = await parentQueue.add('p', {});
    const other = await parentQueue.add('other', {});
    const ref = { id: parent.id, queue: parent.queueQualifiedName };
    await childQueue.add('holder', {}, { jobId: 'taken' });
    const client = newClient();
    closers.push(async () => client.disconnect());
    const before = async () => ({
      jobs: await childQueue.count(), ids: await client.get(childQueue.keys.id),
      deps: await client.scard(parentQueue.keys.flow(parent.id, 'dependencies')), intents: await client.zcard(parentQueue.keys.flowPending),
    });
    const empty = await before();
    expect(empty).toEqual({ jobs: 1, ids: null, deps: 0, intents: 0 });
    // A parent that does not exist, after a plain job and a good child.
    await expect(childQueue.addBulk([
      { name: 'plain', data: 1, opts: { jobId: 'plain-1' } }, { name: 'a', data: 2, opts: { parent: ref } },
      { name: 'b', data: 3, opts: { parent: { id: 'ghost', queue: parent.queueQualifiedName } } },
    ])).rejects.toMatchObject({ name: 'EchoMQError', code: -1, message: expect.stringContaining('addBulk[2]: opts.parent') });
    expect(await before()).toEqual(empty);
    // A child id held by a job that is not this parent's child.
    await expect(childQueue.addBulk([{ name: 'a', data: 2, opts: { parent: ref } }, { name: 'b', data: 3, opts: { parent: ref, jobId: 'taken' } }]))
      .rejects.toMatchObject({ name: 'EchoMQOptionError', field: 'addBulk[1]: opts.jobId' });
    expect(await before()).toEqual(empty);
    // One id named twice with two parents.
    await expect(childQueue.addBulk([
      { name: 'a', data: 2, opts: { parent: ref, jobId: 'twice' } }, { name: 'b', data: 3, opts: { parent: { id: other.id, queue: other.queueQualifiedName }, jobId: 'twice' } },
    ])).rejects.toMatchObject({ name: 'EchoMQOptionError', field: 'addBulk[1]: opts.jobId' });
    await expect(childQueue.addBulk([{ name: 'plain', data: 1, opts: { jobId: 'twice' } }, { name: 'a', data: 2, opts: { parent: ref, jobId: 'twice' } }]))
      .rejects.toMatchObject({ field: 'addBulk[1]: opts.jobId' });
    expect(await before()).toEqual(empty);
    // A parent these children would take past 10,000 unsettled ones.
    await client.sadd(parentQueue.keys.flow(parent.id, 'dependencies'), ...Array.from({ length: 9_999 }, (_, i) => `emq:{${children}}:x${i}`));
    await expect(childQueue.addBulk([{ name: 'a', data: 2, opts: { parent: ref } }, { name: 'b', data: 3, opts: { parent: ref } }]))
      .rejects.toMatchObject({ name: 'EchoMQOptionError', field: 'addBulk[0]: opts.parent' });
    expect(await before()).toEqual({ ...empty, deps: 9_999 });
    // One of them fits; one already a dependency counts for nothing.
    const [fits] = await childQueue.addBulk([{ name: 'a', data: 2, opts: { parent: ref, jobId: 'fits' } }]);
    expect(fits.parent?.id).toBe(parent.id);
    expect((await childQueue.addBulk([{ name: 'a', data: 2, opts: { parent: ref, jobId: 'fits' } }]))[0].id).toBe('fits');
    // Full now: refused by the check, so nothing is written (addDependency-4 would refuse it too,
    // with the same field, but only after an automatic id was taken and the plain job written).
    const full = { ...empty, jobs: 2, deps: 10_000 };
    expect(await before()).toEqual(full);
    await expect(childQueue.add('c', {}, { parent: ref })).rejects.toMatchObject({ field: 'add: opts.parent', message: expect.stringContaining('nothing was written') });
    await expect(childQueue.addBulk([{ name: 'plain', data: 1 }, { name: 'c', data: 2, opts: { parent: ref } }]))
      .rejects.toMatchObject({ field: 'addBulk[1]: opts.parent', message: expect.stringContaining('nothing was written') });
    expect(await before()).toEqual(full);
  });

  it('addBulk refuses a parent that is a plain entry of the same batch, before or after its child: nothing written', async () => {
    // Written as a plain job, such a parent is ready before its children exist: a worker could run
    // and finish it without them. A new parent with children is a FlowProducer's tree.
    const name = uniqueQueueName('steps');
    const q = queue(name);
    const ref = { id: 'p', queue: `emq:{${name}}` };
    const client = newClient();
    closers.push(async () => client.disconnect());
    for (const batch of [
      [{ name: 'p', data: {}, opts: { jobId: 'p' } }, { name: 'c', data: {}, opts: { parent: ref } }],
      [{ name: 'c', data: {}, opts: { parent: ref } }, { name: 'p', data: {}, opts: { jobId: 'p' } }],
      [{ name: 'p', data: {}, opts: { jobId: 'p', deduplication: { id: 'dd' } } }, { name: 'c', data: {}, opts: { parent: ref } }],
    ]) {
      const childAt = batch.findIndex((entry) => 'parent' in entry.opts);
      const parentAt = 1 - childAt;
      await expect(q.addBulk(batch)).rejects.toMatchObject({
        name: 'EchoMQOptionError', field: `addBulk[${childAt}]: opts.parent`, message: expect.stringContaining(`plain entry of this addBulk (addBulk[${parentAt}])`),
      });
      expect([await q.count(), await client.get(q.keys.id)]).toEqual([0, null]);
    }
    // The same parent once written (not in the batch) takes the children.
    const parent = await q.add('p', {}, { jobId: 'p' });
    const [child] = await q.addBulk([{ name: 'c', data: {}, opts: { parent: ref } }]);
    expect((await parent.getDependencies()).unprocessed).toEqual([q.keys.job(child.id)]);
  });

  it('add with a parent that does not exist writes nothing, not even an automatic id', async () => {
    const name = uniqueQueueName('steps');
    const q = queue(name);
    const parent = await q.add('p', {});
    const client = newClient();
    closers.push(async () => client.disconnect());
    const ids = await client.get(q.keys.id);
    await expect(q.add('c', {}, { parent: { id: 'ghost', queue: parent.queueQualifiedName } })).rejects.toMatchObject({ code: -1 });
    expect(await client.get(q.keys.id)).toBe(ids);
  });

  it('a FlowProducer parent can wait again: moveToWaitingChildren with children added in its run', async () => {
    const [parents, children] = [uniqueQueueName('steps'), uniqueQueueName('kids')];
    const flow = new FlowProducer({ connection: testConnection() });
    closers.push(() => flow.close());
    const parentQueue = queue(parents);
    const childQueue = queue(children);
    const errors: Error[] = [];
    worker(children, async (job) => job.name, errors);
    worker(parents, async (job, { token }) => {
      if ((job.data as { more?: boolean }).more !== false) {
        await childQueue.add('late', {}, { parent: { id: job.id, queue: job.queueQualifiedName } });
        await job.updateData({ more: false });
        if (await job.moveToWaitingChildren(token)) throw new WaitingChildrenError();
      }
      return Object.values(await job.getChildrenValues()).sort();
    }, errors);
    const tree = await flow.add({ name: 'p', queueName: parents, data: {}, children: [{ name: 'early', queueName: children }] });
    const done = await finished(parentQueue, tree.job.id);
    expect(done.returnvalue).toEqual(['early', 'late']);
    expect(errors).toEqual([]);
  });
});

describe('failParentOnFailure on a parent that is not waiting (cfr)', () => {
  it('a step parent whose child failed while it ran fails when it asks to wait, naming the child', async () => {
    const [parents, children] = [uniqueQueueName('steps'), uniqueQueueName('kids')];
    const parentQueue = queue(parents);
    const childQueue = queue(children);
    let failedChild!: () => void;
    const childFailed = new Promise<void>((resolve) => (failedChild = resolve));
    const errors: Error[] = [];
    const w = worker(children, async (child) => {
      if ((child.data as { fail: boolean }).fail) throw new Error('broke');
      return 'ok';
    }, errors);
    w.on('failed', () => failedChild());
    let childKey = '';
    worker(parents, async (job, { token }) => {
      const child = await childQueue.add('c', { fail: true }, { parent: { id: job.id, queue: job.queueQualifiedName }, failParentOnFailure: true });
      childKey = `emq:{${children}}:${child.id}`;
      await childQueue.add('c', { fail: false }, { parent: { id: job.id, queue: job.queueQualifiedName } });
      await childFailed;
      await eventually(async () => (await childQueue.client.hget(parentQueue.keys.job(job.id), 'cfr')) !== null, 5000, 'the parent marked');
      if (await job.moveToWaitingChildren(token)) throw new WaitingChildrenError();
      return 'should not complete';
    }, errors);
    const job = await parentQueue.add('steps', {});
    const done = await finished(parentQueue, job.id);
    expect(await done.getState()).toBe('failed');
    expect(done.failedReason).toBe(`child ${childKey} failed: broke`);
    expect(done.attemptsMade).toBe(1);
    expect(errors).toEqual([]);
  });

  it('a parent that would complete after such a failure fails instead', async () => {
    const [parents, children] = [uniqueQueueName('steps'), uniqueQueueName('kids')];
    const parentQueue = queue(parents);
    const childQueue = queue(children);
    worker(children, async () => { throw new Error('broke'); });
    worker(parents, async (job) => {
      await childQueue.add('c', {}, { parent: { id: job.id, queue: job.queueQualifiedName }, failParentOnFailure: true });
      await eventually(async () => (await childQueue.client.hget(parentQueue.keys.job(job.id), 'cfr')) !== null, 5000, 'the parent marked');
      return 'done anyway';
    });
    const job = await parentQueue.add('steps', {}, { attempts: 3 });
    const done = await finished(parentQueue, job.id);
    expect(await done.getState()).toBe('failed');
    expect(done.failedReason).toMatch(/^child emq:\{kids-[0-9a-f]+\}:\d+ failed: broke$/);
    expect(done.attemptsMade).toBe(1); // not retried: the child's failure is final for it
  });

  for (const how of ['job.retry()', 'queue.retryJobs()'] as const) {
    it(`a parent failed that way and retried by ${how} runs its handler again, no longer failed by the old child`, async () => {
      const [parents, children] = [uniqueQueueName('steps'), uniqueQueueName('kids')];
      const parentQueue = queue(parents);
      const childQueue = queue(children);
      worker(children, async () => { throw new Error('broke'); });
      const runs: number[] = [];
      worker(parents, async (job) => {
        runs.push(runs.length + 1);
        if (runs.length > 1) return 'second run';
        await childQueue.add('c', {}, { parent: { id: job.id, queue: job.queueQualifiedName }, failParentOnFailure: true });
        await eventually(async () => (await childQueue.client.hget(parentQueue.keys.job(job.id), 'cfr')) !== null, 5000, 'the parent marked');
        return 'first run';
      });
      const job = await parentQueue.add('steps', {});
      const failed = await finished(parentQueue, job.id);
      expect(failed.failedReason).toMatch(/^child emq:\{kids-[0-9a-f]+\}:\d+ failed: broke$/);
      if (how === 'job.retry()') await failed.retry();
      else await parentQueue.retryJobs({ state: 'failed' });
      const done = await eventually(async () => {
        const read = await parentQueue.getJob(job.id);
        return read?.returnvalue !== undefined ? read : undefined;
      }, 10_000, 'the retried parent completed');
      expect(done!.returnvalue).toBe('second run');
      expect(await done!.getState()).toBe('completed');
      expect(runs).toEqual([1, 2]);
    });
  }

  it('a parent started early by continueParentOnFailure fails, without running, when a later child fails with failParentOnFailure', async () => {
    const [parents, children] = [uniqueQueueName('parents'), uniqueQueueName('kids')];
    const flow = new FlowProducer({ connection: testConnection() });
    closers.push(() => flow.close());
    const tree = await flow.add({
      name: 'p', queueName: parents,
      children: [
        { name: 'first', queueName: children, opts: { continueParentOnFailure: true } },
        { name: 'second', queueName: children, opts: { failParentOnFailure: true } },
      ],
    });
    const childQueue = queue(children);
    const parentQueue = queue(parents);
    // Children first, the parent's worker only once both failed: the parent was started by the
    // first failure (it waits in wait) and marked by the second.
    worker(children, async () => { throw new Error('no'); });
    await eventually(async () => (await childQueue.getJobCounts('failed')).failed === 2, 10_000, 'both children failed');
    await eventually(async () => (await parentQueue.client.hget(parentQueue.keys.job(tree.job.id), 'cfr')) !== null, 5000, 'the parent marked');
    expect(await tree.job.getState()).toBe('waiting');
    let ran = false;
    worker(parents, async () => {
      ran = true;
    });
    const done = await finished(parentQueue, tree.job.id);
    expect(await done.getState()).toBe('failed');
    expect(done.failedReason).toMatch(/failed: no$/);
    expect(ran).toBe(false);
  });
});
