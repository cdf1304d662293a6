import { setTimeout as wait } from 'node:timers/promises';
import { afterAll, describe, expect, it } from '@jest/globals';
import {
  EchoMQOptionError, JobCancelledError, JobTimeoutError, LockManager, Worker,
  type JobCancelledEvent,
} from '../lib/index.js';
import { eventually, newClient, queueKeys, sleep, testConnection } from './support/redis.js';
import { collect, Harness, HarnessPerTest } from './support/workers.js';

// Timeouts (opts.timeout, the worker's jobTimeout) and the cancels a worker makes itself
// (worker.cancelJob, cancelAllJobs): the signal aborts with the reason, the job fails at once
// without waiting for the handler, and whatever the handler returns later is refused.
// docs/locks.md, "Timeouts" and "Cancelling a job".

const client = newClient();
afterAll(async () => {
  await client.quit();
});

const harnesses = new HarnessPerTest();
let h: Harness;

/** A handler that never looks at its signal and returns `value` after `ms`; notes when it returned. */
function ignoring(ms: number, value: unknown, returned: string[]): () => Promise<unknown> {
  return async () => {
    await sleep(ms);
    returned.push(String(value));
    return value;
  };
}

describe('timeouts', () => {
  it('a handler that listens to its signal: the attempt fails with JobTimeoutError and is retried per attempts', async () => {
    h = harnesses.start();
    const reasons: unknown[] = [];
    const worker = h.worker(async (job, { signal }) => {
      if (job.attemptsStarted === 2) return 'second time lucky';
      await new Promise((_, reject) => signal.addEventListener('abort', () => {
        reasons.push(signal.reason);
        reject(signal.reason);
      }));
    });
    const failed = collect(worker, 'failed', 1);
    const completed = collect(worker, 'completed', 1);
    const job = await h.queue.add('slow', {}, { timeout: 150, attempts: 2 });
    const [first] = await failed;
    expect(first.id).toBe(job.id);
    expect(reasons).toHaveLength(1);
    expect(reasons[0]).toBeInstanceOf(JobTimeoutError);
    expect((reasons[0] as JobTimeoutError).timeout).toBe(150);
    await completed;
    const done = await h.queue.getJob(job.id);
    expect(await done!.getState()).toBe('completed');
    expect(done!.returnvalue).toBe('second time lucky');
    expect(done!.attemptsMade).toBe(2);
  });

  it('a handler that ignores it: the job fails without waiting, and its late result is refused', async () => {
    h = harnesses.start();
    const returned: string[] = [];
    const worker = h.worker(ignoring(600, 'too late', returned));
    let returnedBeforeFailed: number | undefined;
    worker.on('failed', () => (returnedBeforeFailed = returned.length));
    const job = await h.queue.add('slow', {}, { timeout: 100 });
    // The worker's 'failed', not the job's hash: the hash shows failedReason as soon as the finish
    // ran in Redis, a moment before the worker has its reply and emits the event.
    await eventually(() => returnedBeforeFailed !== undefined, 5_000, 'the worker reported the job failed');
    expect(returnedBeforeFailed).toBe(0); // failed while the handler still ran
    await eventually(() => returned.length === 1, 5_000, 'the handler returned');
    await sleep(50);
    const failed = await h.queue.getJob(job.id);
    expect(await failed!.getState()).toBe('failed');
    expect(failed!.failedReason).toBe(`job ${job.id} timed out after 100 ms`);
    expect(failed!.returnvalue ?? null).toBeNull();
    expect(await h.queue.getJobCounts('completed', 'failed', 'active')).toEqual({ completed: 0, failed: 1, active: 0 });
  });

  it('the worker\'s jobTimeout is the default; a job\'s own timeout wins over it', async () => {
    h = harnesses.start();
    const worker = h.worker(async (job, { signal }) => {
      await wait(Number((job.data as { ms: number }).ms), undefined, { signal });
      return 'ran';
    }, { jobTimeout: 150, concurrency: 2 });
    const events: string[] = [];
    worker.on('completed', (job) => events.push(`${job.name} completed`));
    worker.on('failed', (job, error) => events.push(`${job.name} failed ${(error as Error).name}`));
    await h.queue.add('default-bound', { ms: 2_000 });
    await h.queue.add('own-bound', { ms: 400 }, { timeout: 3_000 });
    await eventually(() => events.length === 2, 10_000, 'both jobs settled');
    expect(events.sort()).toEqual(['default-bound failed JobTimeoutError', 'own-bound completed']);
  });

  it('a job without a timeout is never cut short', async () => {
    h = harnesses.start();
    const worker = h.worker(async () => {
      await sleep(300);
      return 'whole';
    });
    const [done] = await Promise.all([collect(worker, 'completed', 1), h.queue.add('plain', {})]);
    expect(done[0].returnvalue).toBe('whole');
  });
});

describe('worker.cancelJob and cancelAllJobs', () => {
  it('cancels a running job: JobCancelledError on the signal and as the reason, not retried, cancelled$ says who', async () => {
    h = harnesses.start();
    const lockManager = new LockManager();
    const cancels: JobCancelledEvent[] = [];
    lockManager.cancelled$.subscribe((event) => cancels.push(event));
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    const reasons: unknown[] = [];
    const worker = h.worker(async (_job, { signal }) => {
      started();
      await new Promise((_, reject) => signal.addEventListener('abort', () => {
        reasons.push(signal.reason);
        reject(signal.reason);
      }));
    }, { lockManager });
    const failed = collect(worker, 'failed', 1);
    const job = await h.queue.add('long', {}, { attempts: 5 });
    await running;
    expect(worker.cancelJob('no-such-job')).toBe(false);
    expect(worker.cancelJob(job.id, 'the user asked')).toBe(true);
    expect(worker.cancelJob(job.id, 'twice')).toBe(false); // already being cut short
    await failed;
    expect(reasons[0]).toBeInstanceOf(JobCancelledError);
    expect((reasons[0] as JobCancelledError).reason).toBe('the user asked');
    const stored = await h.queue.getJob(job.id);
    expect(await stored!.getState()).toBe('failed'); // 5 attempts, none retried
    expect(stored!.attemptsMade).toBe(1);
    expect(stored!.failedReason).toBe(`job ${job.id} was cancelled: the user asked`);
    expect(cancels).toEqual([expect.objectContaining({ type: 'cancelled', jobId: job.id, reason: 'the user asked', by: 'worker', workerId: worker.id })]);
    await worker.close();
    await lockManager.close();
  });

  it('cancelAllJobs fails every running job, ignoring handlers included, and the worker goes on', async () => {
    h = harnesses.start();
    const returned: string[] = [];
    const worker = h.worker(async (job) => (job.name === 'after' ? 'fine' : ignoring(800, job.name, returned)()), { concurrency: 3 });
    const failed = collect(worker, 'failed', 3);
    await Promise.all(['a', 'b', 'c'].map((name) => h.queue.add(name, {}, { attempts: 3 })));
    await eventually(() => worker.runningCount === 3, 5_000, 'three jobs running');
    worker.cancelAllJobs('shutting a tenant down');
    const jobs = await failed;
    expect(jobs.map((job) => job.failedReason).sort()).toEqual(jobs.map((job) => `job ${job.id} was cancelled: shutting a tenant down`).sort());
    expect(returned).toEqual([]); // none waited for
    const [after] = await Promise.all([collect(worker, 'completed', 1), h.queue.add('after', {})]);
    expect(after[0].returnvalue).toBe('fine');
    expect(await h.queue.getJobCounts('failed', 'wait', 'delayed')).toEqual({ failed: 3, wait: 0, delayed: 0 });
  });

  it('a cancel made while the handler is called (before its first await): the job fails cancelled, the handler\'s later rejection handled', async () => {
    h = harnesses.start();
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      let rejected = false;
      const worker: Worker = h.worker(async (job) => {
        worker.cancelJob(job.id, 'at once'); // synchronously, inside the processor call
        await sleep(50);
        rejected = true;
        throw new Error('the handler failed on its own, later');
      });
      const [failed] = await Promise.all([collect(worker, 'failed', 1), h.queue.add('x', {}, { attempts: 2 })]);
      expect(failed[0].failedReason).toBe(`job ${failed[0].id} was cancelled: at once`);
      await eventually(() => rejected, 5_000, 'the handler rejected');
      await sleep(20);
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('a job that finished is not cancelled after the fact', async () => {
    h = harnesses.start();
    const worker = h.worker(async () => 'done');
    const [done] = await Promise.all([collect(worker, 'completed', 1), h.queue.add('quick', {})]);
    expect(worker.cancelJob(done[0].id)).toBe(false);
    expect(await (await h.queue.getJob(done[0].id))!.getState()).toBe('completed');
  });
});

describe('bad input', () => {
  it('opts.timeout and jobTimeout are checked, naming the field, before Redis is touched', async () => {
    h = harnesses.start();
    for (const timeout of [0, -5, 1.5, '100', 2 ** 31]) {
      await expect(h.queue.add('x', {}, { timeout: timeout as number })).rejects.toThrow(EchoMQOptionError);
      await expect(h.queue.add('x', {}, { timeout: timeout as number })).rejects.toThrow(/timeout/);
    }
    await expect(h.queue.addBulk([{ name: 'x', data: {}, opts: { timeout: 0 } }])).rejects.toThrow(/addBulk\[0\]|timeout/);
    expect(await queueKeys(client, h.name)).toEqual([]);
    expect(() => new Worker(h.name, async () => undefined, { connection: testConnection(), jobTimeout: 0, autorun: false })).toThrow(/jobTimeout/);
  });

  it('a cancel reason must be a string', async () => {
    h = harnesses.start();
    const worker = h.worker(async () => undefined, { autorun: false });
    expect(() => worker.cancelJob('1', 42 as unknown as string)).toThrow(EchoMQOptionError);
    expect(() => worker.cancelAllJobs({} as unknown as string)).toThrow(/reason/);
  });
});
