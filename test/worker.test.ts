import { afterEach, describe, expect, it } from '@jest/globals';
import { UnrecoverableError, type Job } from '../lib/index.js';
import { eventually, sleep } from './support/redis.js';
import { collect, Harness } from './support/workers.js';

// The Worker against real Redis: order, delays, retries, removeOn*. Lifecycle is in worker-lifecycle.test.ts.
let h: Harness;
afterEach(async () => {
  await h.close();
  expect(h.errors).toEqual([]);
});

describe('Worker: order', () => {
  it('runs jobs FIFO', async () => {
    h = new Harness();
    await h.queue.addBulk(Array.from({ length: 8 }, (_, i) => ({ name: `j${i}`, data: i })));
    const done = collect(h.worker(async () => null), 'completed', 8);
    expect((await done).map((j) => j.name)).toEqual(['j0', 'j1', 'j2', 'j3', 'j4', 'j5', 'j6', 'j7']);
  });

  it('runs a LIFO job before older ones', async () => {
    h = new Harness();
    await h.queue.addBulk([{ name: 'a', data: 0 }, { name: 'b', data: 0 }, { name: 'c', data: 0, opts: { lifo: true } }]);
    const done = collect(h.worker(async () => null), 'completed', 3);
    expect((await done).map((j) => j.name)).toEqual(['c', 'a', 'b']);
  });

  it('runs by priority (1 first), FIFO within one priority, unprioritized jobs first', async () => {
    h = new Harness();
    await h.queue.addBulk([
      { name: 'p3a', data: 0, opts: { priority: 3 } },
      { name: 'p1', data: 0, opts: { priority: 1 } },
      { name: 'p3b', data: 0, opts: { priority: 3 } },
      { name: 'plain', data: 0 },
      { name: 'p2', data: 0, opts: { priority: 2 } },
    ]);
    const done = collect(h.worker(async () => null), 'completed', 5);
    expect((await done).map((j) => j.name)).toEqual(['plain', 'p1', 'p2', 'p3a', 'p3b']);
  });
});

describe('Worker: delayed jobs', () => {
  it('promotes a delayed job on time while the worker is idle (not after drainDelay)', async () => {
    h = new Harness();
    const worker = h.worker(async () => null, { drainDelay: 20 });
    await worker.waitUntilReady();
    await eventually(async () => (await h.queue.getJobCounts('wait')).wait === 0 && worker.runningCount === 0);
    await sleep(200); // the worker is now blocked on the marker with a 20 s timeout
    const done = collect(worker, 'completed', 1);
    const job = await h.queue.add('later', {}, { delay: 800 });
    const [finished] = await done;
    const dueAt = job.timestamp + 800;
    expect(finished.processedOn).toBeGreaterThanOrEqual(dueAt);
    // Far below the 20 s block: the block was shortened to the job's due time.
    expect(finished.processedOn! - dueAt).toBeLessThan(5000);
  });

  it('orders delayed jobs by due time, and a delayed job added before a worker starts still runs', async () => {
    h = new Harness();
    await h.queue.add('second', {}, { delay: 600 });
    await h.queue.add('first', {}, { delay: 300 });
    const done = collect(h.worker(async () => null), 'completed', 2);
    expect((await done).map((j) => j.name)).toEqual(['first', 'second']);
  });
});

describe('Worker: retries', () => {
  /** A processor that fails `failures` times, recording when each attempt started. */
  function flaky(failures: number, starts: number[]) {
    return async (job: Job) => {
      starts.push(Date.now());
      if (job.attemptsMade < failures) throw new Error(`attempt ${job.attemptsMade + 1} failed`);
      return 'ok';
    };
  }

  it('retries with a fixed backoff until it succeeds', async () => {
    h = new Harness();
    const starts: number[] = [];
    const worker = h.worker(flaky(2, starts));
    const retried: boolean[] = [];
    worker.on('failed', (_job, _error, willRetry) => retried.push(willRetry));
    const done = collect(worker, 'completed', 1);
    const job = await h.queue.add('f', {}, { attempts: 3, backoff: { type: 'fixed', delay: 300 } });
    await done;
    expect(retried).toEqual([true, true]);
    expect(starts[1] - starts[0]).toBeGreaterThanOrEqual(290);
    expect(starts[2] - starts[1]).toBeGreaterThanOrEqual(290);
    const stored = await h.queue.getJob(job.id);
    expect(stored?.attemptsMade).toBe(3);
    expect(stored?.attemptsStarted).toBe(3);
    expect(stored?.returnvalue).toBe('ok');
    expect(await stored?.getState()).toBe('completed');
  });

  it('retries with an exponential backoff: each wait doubles', async () => {
    h = new Harness();
    const starts: number[] = [];
    const done = collect(h.worker(flaky(3, starts)), 'completed', 1);
    await h.queue.add('e', {}, { attempts: 4, backoff: { type: 'exponential', delay: 150 } });
    await done;
    expect(starts).toHaveLength(4);
    expect(starts[1] - starts[0]).toBeGreaterThanOrEqual(140);
    expect(starts[2] - starts[1]).toBeGreaterThanOrEqual(290);
    expect(starts[3] - starts[2]).toBeGreaterThanOrEqual(590);
  });

  it('fails for good when the attempts run out, keeping every stacktrace', async () => {
    h = new Harness();
    const worker = h.worker(async () => { throw new Error('always'); });
    const finalFailure = new Promise<Job>((resolve) => worker.on('failed', (job, _e, willRetry) => { if (!willRetry) resolve(job); }));
    const job = await h.queue.add('x', {}, { attempts: 2 });
    await finalFailure;
    const stored = await h.queue.getJob(job.id);
    expect(await stored?.getState()).toBe('failed');
    expect(stored?.attemptsMade).toBe(2);
    expect(stored?.failedReason).toBe('always');
    expect(stored?.stacktrace).toHaveLength(2);
  });

  it('an UnrecoverableError fails at once, whatever attempts are left', async () => {
    h = new Harness();
    let runs = 0;
    const worker = h.worker(async () => { runs++; throw new UnrecoverableError('bad input'); });
    const failed = collect(worker, 'failed', 1);
    const job = await h.queue.add('u', {}, { attempts: 5 });
    await failed;
    await sleep(300);
    expect(runs).toBe(1);
    const stored = await h.queue.getJob(job.id);
    expect(await stored?.getState()).toBe('failed');
    expect(stored?.failedReason).toBe('bad input');
  });

  it('a result JSON cannot carry fails the job with a clear reason', async () => {
    h = new Harness();
    const failed = collect(h.worker(async () => 10n as unknown), 'failed', 1);
    const job = await h.queue.add('big', {});
    await failed;
    expect((await h.queue.getJob(job.id))?.failedReason).toMatch(/BigInt/);
  });
});

describe('Worker: removeOnComplete and removeOnFail', () => {
  /** Adds `count` jobs with `opts` and waits until one worker finished them all; returns their ids. */
  let worker: ReturnType<Harness['worker']> | undefined;
  async function runAll(opts: object, count: number, fail = false): Promise<string[]> {
    worker ??= h.worker(async (job: Job) => { if ((job.data as { fail: boolean }).fail) throw new Error('no'); return 1; });
    const done = collect(worker, fail ? 'failed' : 'completed', count);
    const jobs = await h.queue.addBulk(Array.from({ length: count }, () => ({ name: 'n', data: { fail }, opts })));
    await done;
    return jobs.map((j) => j.id);
  }
  afterEach(() => { worker = undefined; });

  it('true removes the job when it completes', async () => {
    h = new Harness();
    const [id] = await runAll({ removeOnComplete: true }, 1);
    expect(await h.queue.getJob(id)).toBeUndefined();
    expect(await h.queue.getJobCounts('completed')).toEqual({ completed: 0 });
  });

  it('a count keeps only the newest completed jobs', async () => {
    h = new Harness();
    const ids = await runAll({ removeOnComplete: 2 }, 5);
    expect((await h.queue.getJobs('completed')).map((j) => j.id).sort()).toEqual(ids.slice(3).sort());
    expect(await h.queue.getJob(ids[0])).toBeUndefined();
  });

  it('{ age, count } removes completed jobs older than age seconds, and keeps at most count', async () => {
    h = new Harness();
    const [old] = await runAll({ removeOnComplete: { age: 1, count: 2 } }, 1);
    expect(await h.queue.getJob(old)).toBeDefined();
    await sleep(1200);
    const recent = await runAll({ removeOnComplete: { age: 1, count: 2 } }, 1);
    expect(await h.queue.getJob(old)).toBeUndefined();
    expect((await h.queue.getJobs('completed')).map((j) => j.id)).toEqual(recent);
    await runAll({ removeOnComplete: { age: 1, count: 2 } }, 3);
    expect(await h.queue.getJobCounts('completed')).toEqual({ completed: 2 });
  });

  it('removeOnFail: true removes, a count keeps the newest, { age } drops old ones', async () => {
    h = new Harness();
    const [gone] = await runAll({ removeOnFail: true }, 1, true);
    expect(await h.queue.getJob(gone)).toBeUndefined();
    const ids = await runAll({ removeOnFail: 1 }, 3, true);
    expect((await h.queue.getJobs('failed')).map((j) => j.id)).toEqual([ids[2]]);
    await sleep(1200);
    const [fresh] = await runAll({ removeOnFail: { age: 1 } }, 1, true);
    expect((await h.queue.getJobs('failed')).map((j) => j.id)).toEqual([fresh]);
    expect(await h.queue.getJob(ids[2])).toBeUndefined();
  });

  it('without an option every finished job is kept', async () => {
    h = new Harness();
    await runAll({}, 3);
    await runAll({}, 2, true);
    expect(await h.queue.getJobCounts('completed', 'failed')).toEqual({ completed: 3, failed: 2 });
  });
});
