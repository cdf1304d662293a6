import { afterAll, describe, expect, it } from '@jest/globals';
import { EchoMQOptionError, JobCancelledError, Queue, Worker, type Job } from '../lib/index.js';
import { eventually, newClient, sleep, testConnection, uniqueQueueName } from './support/redis.js';
import { collect, Harness, HarnessPerTest } from './support/workers.js';

// A worker's `prefetch` (docs/prefetch.md): it holds that many jobs locked beyond `concurrency`,
// each started the moment a handler ends; never more than `concurrency` handlers at once.

const client = newClient();
afterAll(async () => {
  await client.quit();
});

const harnesses = new HarnessPerTest();
let h: Harness;

/** How many jobs of the harness's queue are in `state`. */
async function count(state: 'active' | 'wait' | 'completed'): Promise<number> {
  return (await h.queue.getJobCounts(state))[state] ?? 0;
}

/** A gate a handler waits on until the test opens it. */
function gate(): { wait: Promise<void>; open: () => void } {
  let open!: () => void;
  const wait = new Promise<void>((resolve) => (open = resolve));
  return { wait, open };
}

/** Handlers that note when each starts and how many run at once; job `i` waits for `gates[i]` when there is one. */
function tracking(gates: Record<number, Promise<void>> = {}) {
  const started: number[] = [];
  let running = 0;
  let most = 0;
  const handler = async (job: Job<{ i: number }>) => {
    started.push(job.data.i);
    most = Math.max(most, ++running);
    try {
      await gates[job.data.i];
    } finally {
      running--;
    }
    return job.data.i;
  };
  return { handler, started, most: () => most };
}

describe('prefetch', () => {
  it('holds one job ahead while the first runs, starts it only when that one ends, in pickup order', async () => {
    h = harnesses.start();
    const first = gate();
    const { handler, started, most } = tracking({ 1: first.wait });
    const activeEvents: number[] = [];
    const worker = h.worker<{ i: number }>(handler, { concurrency: 1, prefetch: 1 });
    worker.on('active', (job) => activeEvents.push((job as Job<{ i: number }>).data.i));
    const completed = collect(worker as Worker, 'completed', 4);
    await h.queue.addBulk([1, 2, 3, 4].map((i) => ({ name: 'j', data: { i } })));
    await eventually(async () => (await count('active')) === 2, 5_000, 'two jobs active (one running, one held)');
    await sleep(100);
    expect(started).toEqual([1]); // the held job has not started
    expect(activeEvents).toEqual([1]); // 'active' is its start, not its pickup
    expect(worker.runningCount).toBe(2);
    first.open();
    const done = await completed;
    expect(started).toEqual([1, 2, 3, 4]);
    expect(done.map((job) => job.returnvalue)).toEqual([1, 2, 3, 4]);
    expect(most()).toBe(1);
    expect(await h.queue.getJobCounts('completed', 'active', 'wait')).toEqual({ completed: 4, active: 0, wait: 0 });
  });

  it('with several held, they start in the order they were taken', async () => {
    h = harnesses.start();
    const first = gate();
    const { handler, started, most } = tracking({ 1: first.wait });
    const worker = h.worker<{ i: number }>(handler, { concurrency: 1, prefetch: 3 });
    const completed = collect(worker as Worker, 'completed', 6);
    await h.queue.addBulk([1, 2, 3, 4, 5, 6].map((i) => ({ name: 'j', data: { i } })));
    await eventually(async () => (await count('active')) === 4, 5_000, 'four jobs active (one running, three held)');
    first.open();
    await completed;
    expect(started).toEqual([1, 2, 3, 4, 5, 6]);
    expect(most()).toBe(1);
  });

  it('without prefetch the worker holds no job beyond concurrency', async () => {
    h = harnesses.start();
    const first = gate();
    const { handler } = tracking({ 1: first.wait });
    const worker = h.worker<{ i: number }>(handler, { concurrency: 1 });
    const completed = collect(worker as Worker, 'completed', 2);
    await h.queue.addBulk([1, 2].map((i) => ({ name: 'j', data: { i } })));
    await eventually(async () => (await count('active')) === 1, 5_000, 'one job active');
    await sleep(150);
    expect(await h.queue.getJobCounts('active', 'wait')).toEqual({ active: 1, wait: 1 });
    first.open();
    await completed;
  });

  it('concurrency 2 with prefetch 2: four jobs held, two handlers at a time', async () => {
    h = harnesses.start();
    const gates = [gate(), gate()];
    const { handler, started, most } = tracking({ 1: gates[0].wait, 2: gates[1].wait });
    const worker = h.worker<{ i: number }>(handler, { concurrency: 2, prefetch: 2 });
    const completed = collect(worker as Worker, 'completed', 6);
    await h.queue.addBulk([1, 2, 3, 4, 5, 6].map((i) => ({ name: 'j', data: { i } })));
    await eventually(async () => (await count('active')) === 4, 5_000, 'four jobs active');
    await sleep(100);
    expect(started.sort()).toEqual([1, 2]);
    expect(await count('wait')).toBe(2);
    for (const g of gates) g.open();
    await completed;
    expect(most()).toBe(2);
  });

  it('a held job is renewed by the heartbeat while it waits: it does not stall, one attempt', async () => {
    h = harnesses.start();
    const first = gate();
    const { handler } = tracking({ 1: first.wait });
    // Renewals every 250 ms leave 1250 ms for a pause of this (Jest's) process; without them the lock
    // lapses at 1500 ms and the sweep, every 200 ms, finds it before the first job ends.
    const opts = { concurrency: 1, prefetch: 1, lockDuration: 1500, lockRenewTime: 250, stalledInterval: 200 };
    const worker = h.worker<{ i: number }>(handler, opts);
    const stalled: string[] = [];
    worker.on('stalled', (jobId) => stalled.push(jobId));
    const completed = collect(worker as Worker, 'completed', 2);
    const [, second] = await h.queue.addBulk([1, 2].map((i) => ({ name: 'j', data: { i } })));
    await eventually(async () => (await count('active')) === 2, 5_000, 'two jobs active');
    await sleep(2_500); // more than a lock duration and many sweeps while the second waits
    first.open();
    await completed;
    expect(stalled).toEqual([]);
    const done = await h.queue.getJob(second.id);
    expect(done!.attemptsStarted).toBe(1);
    expect(done!.attemptsMade).toBe(1);
  });

  it('a job timeout counts from the handler start, not from the pickup', async () => {
    h = harnesses.start();
    const worker = h.worker<{ i: number }>(async (job) => {
      await sleep(job.data.i === 1 ? 400 : 50);
      return job.data.i;
    }, { concurrency: 1, prefetch: 1 });
    const completed = collect(worker as Worker, 'completed', 2);
    const failed: Job[] = [];
    worker.on('failed', (job) => failed.push(job as Job));
    await h.queue.add('j', { i: 1 });
    await h.queue.add('j', { i: 2 }, { timeout: 250 }); // held for about 400 ms, runs 50
    await eventually(async () => (await count('active')) === 2, 5_000, 'the second held while the first runs');
    await completed;
    expect(failed).toEqual([]);
  });

  it('close() runs the started job to its end and gives the held one back to wait, unstarted and uncounted', async () => {
    h = harnesses.start();
    const first = gate();
    const { handler, started } = tracking({ 1: first.wait });
    const worker = h.worker<{ i: number }>(handler, { concurrency: 1, prefetch: 1 });
    const [one, two] = await h.queue.addBulk([1, 2].map((i) => ({ name: 'j', data: { i } })));
    await eventually(async () => (await count('active')) === 2, 5_000, 'two jobs active');
    const closed = worker.close();
    await eventually(async () => (await count('wait')) === 1, 5_000, 'the held job back in wait');
    first.open();
    await closed;
    expect(started).toEqual([1]);
    expect(await (await h.queue.getJob(one.id))!.getState()).toBe('completed');
    const back = await h.queue.getJob(two.id);
    expect(await back!.getState()).toBe('waiting');
    expect(back!.attemptsMade).toBe(0);
    expect(await client.exists(h.queue.keys.lock(two.id))).toBe(0);
    // Another worker takes it next and runs it.
    const next = h.worker<{ i: number }>(handler, { concurrency: 1 });
    const [done] = await collect(next as Worker, 'completed', 1);
    expect(done.id).toBe(two.id);
    expect(done.attemptsMade).toBe(1);
  });

  it('a held job cancelled while it waits fails at once as cancelled, its handler never run', async () => {
    h = harnesses.start();
    const first = gate();
    const { handler, started } = tracking({ 1: first.wait });
    const worker = h.worker<{ i: number }>(handler, { concurrency: 1, prefetch: 1 });
    const activeEvents: string[] = [];
    worker.on('active', (job) => activeEvents.push(job.id));
    const failed = collect(worker as Worker, 'failed', 1);
    const [one, two] = await h.queue.addBulk([1, 2].map((i) => ({ name: 'j', data: { i } })));
    await eventually(async () => (await count('active')) === 2, 5_000, 'two jobs active');
    expect(worker.cancelJob(two.id, 'not needed')).toBe(true);
    const [job] = await failed;
    expect(job.id).toBe(two.id);
    expect(started).toEqual([1]); // the first still runs
    expect(activeEvents).toEqual([one.id]); // the cancelled one never started
    const stored = await h.queue.getJob(two.id);
    expect(await stored!.getState()).toBe('failed');
    expect(stored!.failedReason).toBe(new JobCancelledError(two.id, 'not needed').message);
    first.open();
    await eventually(async () => (await count('completed')) === 1, 5_000, 'the first completed');
    expect(started).toEqual([1]);
  });

  it('queue.cancelJob reaches a held job through the heartbeat: it fails as cancelled, unstarted', async () => {
    h = harnesses.start();
    const first = gate();
    const { handler, started } = tracking({ 1: first.wait });
    const worker = h.worker<{ i: number }>(handler, { concurrency: 1, prefetch: 1, lockDuration: 1000 });
    const failed = collect(worker as Worker, 'failed', 1);
    const [, two] = await h.queue.addBulk([1, 2].map((i) => ({ name: 'j', data: { i } })));
    await eventually(async () => (await count('active')) === 2, 5_000, 'two jobs active');
    expect(await h.queue.cancelJob(two.id, 'from afar')).toBe(true);
    const [job] = await failed;
    expect(job.id).toBe(two.id);
    expect(job.failedReason).toBe(new JobCancelledError(two.id, 'from afar').message);
    expect(started).toEqual([1]);
    first.open();
  });

  it('a held job whose lock is lost while it waits is not started: lockLost, and it is swept back and run once', async () => {
    h = harnesses.start();
    const first = gate();
    const { handler, started } = tracking({ 1: first.wait });
    const worker = h.worker<{ i: number }>(handler, { concurrency: 1, prefetch: 1, lockDuration: 600, stalledInterval: 300 });
    const lost: string[] = [];
    worker.on('lockLost', (job) => lost.push(job.id));
    const [, two] = await h.queue.addBulk([1, 2].map((i) => ({ name: 'j', data: { i } })));
    await eventually(async () => (await count('active')) === 2, 5_000, 'two jobs active');
    await client.del(h.queue.keys.lock(two.id));
    await eventually(() => lost.includes(two.id), 5_000, 'the held job reported lost');
    expect(started).toEqual([1]);
    first.open();
    await eventually(async () => (await count('completed')) === 2, 10_000, 'both completed, the second after the sweep');
    expect(started).toEqual([1, 2]);
  });

  it('close() with several held gives them back so that they are taken again in their order', async () => {
    h = harnesses.start();
    const first = gate();
    const { handler } = tracking({ 1: first.wait });
    const worker = h.worker<{ i: number }>(handler, { concurrency: 1, prefetch: 3 });
    await h.queue.addBulk([1, 2, 3, 4, 5].map((i) => ({ name: 'j', data: { i } })));
    await eventually(async () => (await count('active')) === 4, 5_000, 'four jobs active');
    const closed = worker.close();
    await eventually(async () => (await count('wait')) === 4, 5_000, 'the three held back in wait, with the one never taken');
    first.open();
    await closed;
    const next = tracking();
    const after = h.worker<{ i: number }>(next.handler, { concurrency: 1 });
    await collect(after as Worker, 'completed', 4);
    expect(next.started).toEqual([2, 3, 4, 5]);
  });

  it('close(true) does not wait for the held job: its lock lapses and the stalled sweep gives it to another worker', async () => {
    h = harnesses.start();
    const never = gate();
    const opts = { concurrency: 1, prefetch: 1, lockDuration: 300, stalledInterval: 200 };
    const worker = h.worker<{ i: number }>(async (job) => { if (job.data.i === 1) await never.wait; }, opts);
    const [, two] = await h.queue.addBulk([1, 2].map((i) => ({ name: 'j', data: { i } })));
    await eventually(async () => (await count('active')) === 2, 5_000, 'two jobs active');
    await worker.close(true);
    const rescuer = h.worker<{ i: number }>(async (job) => job.data.i, { stalledInterval: 200, lockDuration: 300 });
    await eventually(async () => (await count('completed')) === 2, 10_000, 'both jobs run by the other worker');
    expect(await (await h.queue.getJob(two.id))!.getState()).toBe('completed');
    await rescuer.close();
    never.open();
  });

  it('a sandboxed processor: held jobs wait in the worker, one sandbox runs them one at a time', async () => {
    h = harnesses.start();
    const file = new URL('./fixtures/sandbox/processor.mjs', import.meta.url);
    const worker = new Worker(h.name, file, { connection: testConnection(), useWorkerThreads: true, concurrency: 1, prefetch: 1 });
    worker.on('error', (error) => h.errors.push(error));
    try {
      const completed = collect(worker, 'completed', 4);
      await h.queue.addBulk([1, 2, 3, 4].map(() => ({ name: 'j', data: { mode: 'busy', ms: 150 } })));
      await eventually(async () => (await count('active')) === 2, 5_000, 'one job running in the sandbox, one held');
      const done = await completed;
      // A second handler at once would have needed a second sandbox (another thread).
      const threads = new Set(done.map((job) => (job.returnvalue as { threadId: number }).threadId));
      expect(threads.size).toBe(1);
    } finally {
      await worker.close();
    }
  });

  it('a partitioned queue: held jobs count in the worker across partitions, one handler at a time', async () => {
    const name = uniqueQueueName('pf');
    const queue = new Queue(name, { connection: testConnection(), partitions: 2 });
    const first = gate();
    let gated = false;
    let running = 0;
    let most = 0;
    const started: string[] = [];
    const worker = new Worker(name, async (job) => {
      started.push(job.id);
      most = Math.max(most, ++running);
      try {
        if (!gated) {
          gated = true;
          await first.wait;
        }
      } finally {
        running--;
      }
    }, { connection: testConnection(), partitions: 2, concurrency: 1, prefetch: 1 });
    const errors: Error[] = [];
    worker.on('error', (error) => errors.push(error));
    try {
      const completed = collect(worker, 'completed', 6);
      await queue.addBulk([1, 2, 3, 4, 5, 6].map((i) => ({ name: 'j', data: { i }, opts: { partitionKey: `k${i}` } })));
      await eventually(async () => ((await queue.getJobCounts('active')).active ?? 0) === 2, 5_000, 'two jobs active over the partitions');
      await sleep(100);
      expect(started).toHaveLength(1);
      first.open();
      await completed;
      expect(most).toBe(1);
      expect(errors).toEqual([]);
    } finally {
      await worker.close();
      await queue.obliterate({ force: true });
      await queue.close();
    }
  });

  it('refuses a prefetch that is not a whole number of 0 or more, naming the field, before it connects', () => {
    for (const prefetch of [-1, 1.5, Number.NaN, '1' as unknown as number]) {
      let thrown: unknown;
      try {
        new Worker('never-made', async () => undefined, { connection: testConnection(), prefetch, autorun: false });
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(EchoMQOptionError);
      expect((thrown as EchoMQOptionError).field).toBe('prefetch');
    }
  });
});
