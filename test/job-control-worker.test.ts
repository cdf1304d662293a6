import { afterAll, afterEach, describe, expect, it } from '@jest/globals';
import { randomUUID as uuid } from 'node:crypto';
import {
  DelayedError, EchoMQError, Queue, Worker, type Job, type LockReleasedEvent, type ProcessorFunction, type WorkerConstructorOptions,
} from '../lib/index.js';
import { Redis } from 'ioredis';
import { parseSchedulerJobId, SCRIPTS } from '../lib/internal.js';
import { FaultyProxy } from './support/faulty-proxy.js';
import { eventually, newClient, redisUrl, singleNodeDescribe, sleep, testConnection, uniqueQueueName } from './support/redis.js';
import { snapshot } from './support/scripts.js';

// Job control where a worker is involved (docs/job-control.md): a handler that moves its job to
// delayed and throws DelayedError (a job run in steps), the refusals of that move, discard, and
// the wake-ups after changeDelay, promote and retryJobs, on a plain and a partitioned queue.
const redis = newClient();
const closers: Array<() => Promise<unknown>> = [];
/** What the workers of a test reported on 'error'; a test that expects some takes them out. */
let errors: Error[] = [];
afterEach(async () => {
  while (closers.length) await closers.pop()!();
  const seen = errors;
  errors = [];
  expect(seen).toEqual([]);
});
afterAll(() => redis.quit());

/** A queue of `partitions` and a way to start its workers; all closed after the test. */
function setup(partitions: number) {
  const name = uniqueQueueName('jcw');
  const count = partitions === 1 ? undefined : partitions;
  const queue = new Queue(name, { connection: testConnection(), partitions: count });
  closers.push(async () => {
    await queue.obliterate({ force: true });
    await queue.close();
  });
  const worker = <D = any, R = any>(processor: ProcessorFunction<D, R>, opts: WorkerConstructorOptions = {}) => {
    const w = new Worker<D, R>(name, processor, { connection: testConnection(), partitions: count, ...opts });
    w.on('error', (error) => errors.push(error));
    closers.push(() => w.close(true));
    return w;
  };
  return { queue, worker };
}

/** Every key of every partition of the queue. */
async function everything(queue: Queue): Promise<Record<string, unknown>> {
  const parts = await Promise.all(queue.partitionKeys.map((keys) => snapshot(redis, keys)));
  return Object.assign({}, ...parts);
}

const kinds = [['a plain queue', 1], ['a partitioned queue', 3]] as const;

describe.each(kinds)('a job run in steps on %s', (_kind, partitions) => {
  it('moveToDelayed + DelayedError: each step neither completes nor fails, counts no attempt, and lets its lock go', async () => {
    const { queue, worker } = setup(partitions);
    const completed: Job[] = [];
    const failed: Job[] = [];
    const w = worker<{ step: number }>(async (job, { token }) => {
      if (job.data.step < 3) {
        await job.updateData({ step: job.data.step + 1 });
        await job.moveToDelayed(Date.now() + 30, token);
        throw new DelayedError();
      }
      return `done after ${job.data.step}`;
    });
    const released: Array<LockReleasedEvent['reason']> = [];
    const subscription = w.lockManager.released$.subscribe((event) => released.push(event.reason));
    w.on('completed', (job) => completed.push(job));
    w.on('failed', (job) => failed.push(job));
    const added = await queue.add('steps', { step: 0 }, { attempts: 1 });
    await eventually(() => completed.length === 1);
    subscription.unsubscribe();
    expect(failed).toEqual([]);
    const done = (await queue.getJob(added.id))!;
    expect(done.returnvalue).toBe('done after 3');
    expect(done.data).toEqual({ step: 3 });
    expect(done.attemptsMade).toBe(1); // the steps counted none: attempts 1 was enough
    expect(done.attemptsStarted).toBe(4);
    expect(released).toEqual(['delayed', 'delayed', 'delayed', 'completed']);
  });
});

describe('moveToDelayed refused in a handler', () => {
  it('with a token that is not the lock\'s: -6, nothing written, and the run keeps its lock and completes', async () => {
    const { queue, worker } = setup(1);
    let refusal: unknown;
    let unchanged = false;
    const w = worker(async (job) => {
      const before = await everything(queue);
      try {
        await job.moveToDelayed(Date.now() + 1000, uuid());
      } catch (error) {
        refusal = error;
      }
      unchanged = JSON.stringify(await everything(queue)) === JSON.stringify(before);
      await sleep(1200); // longer than lockDuration: only renewals keep the lock
      return 'kept';
    }, { lockDuration: 1000, lockRenewTime: 200 }); // renewals every 200 ms: room for an 800 ms pause of Jest's process
    const done = new Promise<Job>((resolve) => w.on('completed', resolve));
    await queue.add('a', {});
    expect((await done).returnvalue).toBe('kept');
    expect(refusal).toBeInstanceOf(EchoMQError);
    expect((refusal as EchoMQError).code).toBe(-6);
    expect(unchanged).toBe(true);
  });

  it('after the lock lapsed: -2, nothing written; the job is not this worker\'s (lockLost), neither completed nor failed', async () => {
    const { queue, worker } = setup(1);
    let refusal: unknown;
    let unchanged = false;
    const w = worker(async (job, { token }) => {
      await redis.del(queue.keys.lock(job.id)); // as if the lock had lapsed
      const before = await everything(queue);
      try {
        await job.moveToDelayed(Date.now() + 1000, token);
      } catch (error) {
        refusal = error;
        unchanged = JSON.stringify(await everything(queue)) === JSON.stringify(before);
        throw error;
      }
    });
    const lost = new Promise<Job>((resolve) => w.on('lockLost', resolve));
    const outcomes: string[] = [];
    w.on('completed', () => outcomes.push('completed'));
    w.on('failed', () => outcomes.push('failed'));
    const job = await queue.add('a', {});
    expect((await lost).id).toBe(job.id);
    expect((refusal as EchoMQError).code).toBe(-2);
    expect(unchanged).toBe(true);
    expect(outcomes).toEqual([]);
    expect(await job.getState()).toBe('active'); // for the stalled sweep
  });
});

describe('DelayedError and discard', () => {
  it('a DelayedError without a move is an ordinary failure that says what was missing', async () => {
    const { queue, worker } = setup(1);
    const w = worker(async () => {
      throw new DelayedError();
    });
    const failed = new Promise<[Job, Error, boolean]>((resolve) => w.on('failed', (...args) => resolve(args)));
    const job = await queue.add('a', {}, { attempts: 2 });
    const [, error, willRetry] = await failed;
    expect(error.message).toContain(`did not move job ${job.id} to delayed`);
    expect(willRetry).toBe(true);
  });

  it('a handler that moved its job and then returns: the job stays delayed, the result is dropped with an error', async () => {
    const { queue, worker } = setup(1);
    const w = worker(async (job, { token }) => {
      await job.moveToDelayed(Date.now() + 60_000, token);
      return 'ignored';
    });
    const outcomes: string[] = [];
    w.on('completed', () => outcomes.push('completed'));
    const job = await queue.add('a', {});
    await eventually(() => errors.length === 1);
    expect(errors.splice(0)[0].message).toContain(`job ${job.id} was moved to delayed by its handler, which then returned`);
    expect(await job.getState()).toBe('delayed');
    expect(outcomes).toEqual([]);
  });

  it('discard: the failing run is final whatever attempts are left; without it the job is retried', async () => {
    const { queue, worker } = setup(1);
    const w = worker(async (job) => {
      if (job.name === 'discarded') job.discard();
      throw new Error('no');
    });
    const seen: Array<[string, boolean]> = [];
    w.on('failed', (job, _error, willRetry) => seen.push([job.name, willRetry]));
    const discarded = await queue.add('discarded', {}, { attempts: 3 });
    await eventually(() => seen.length === 1);
    await queue.add('kept', {}, { attempts: 2 });
    await eventually(() => seen.length === 3);
    expect(seen).toEqual([['discarded', false], ['kept', true], ['kept', false]]);
    const stored = (await queue.getJob(discarded.id))!;
    expect([await stored.getState(), stored.attemptsMade, stored.discarded]).toEqual(['failed', 1, false]); // discard is local to the run's Job
  });
});

describe.each(kinds)('wake-ups on %s', (_kind, partitions) => {
  /** A worker idle long enough to block for its whole drainDelay (20 s) before the change. */
  async function idleWorker(worker: ReturnType<typeof setup>['worker']) {
    const processed: Job[] = [];
    const w = worker(async (job) => {
      processed.push(job);
      return null;
    }, { drainDelay: 20 });
    await w.waitUntilReady();
    await sleep(300);
    return processed;
  }

  it('changeDelay to sooner wakes an idle worker, which runs the job at its new due time', async () => {
    const { queue, worker } = setup(partitions);
    const job = await queue.add('later', {}, { delay: 60_000 });
    const processed = await idleWorker(worker);
    await sleep(200);
    const changedAt = Date.now();
    await job.changeDelay(300);
    await eventually(() => processed.length === 1, 8000);
    expect(processed[0].processedOn!).toBeGreaterThanOrEqual(changedAt + 300);
    expect(processed[0].processedOn! - changedAt).toBeLessThan(8000); // well before the 20 s block or the old due time
  });

  it('promote and retryJobs wake an idle worker', async () => {
    const { queue, worker } = setup(partitions);
    const delayed = await queue.add('later', {}, { delay: 60_000 });
    const processed = await idleWorker(worker);
    await delayed.promote();
    await eventually(() => processed.length === 1, 8000);
    const failing = setup(partitions); // another queue, whose worker fails its job once
    const failedOnce = failing.worker(async () => {
      throw new Error('once');
    });
    await failing.queue.add('f', {});
    await eventually(async () => (await failing.queue.getJobCounts('failed')).failed === 1);
    await failedOnce.close();
    const processedAgain = await idleWorker(failing.worker);
    await failing.queue.retryJobs();
    await eventually(() => processedAgain.length === 1, 8000);
  });
});

describe('a job scheduler\'s jobs', () => {
  const slotOf = (jobId: string) => parseSchedulerJobId(jobId)!.slot;

  it('promote runs the next slot\'s job now, and the scheduler moves on past it', async () => {
    const { queue, worker } = setup(1);
    const first = (await queue.upsertJobScheduler('hourly', { every: 3_600_000 }))!;
    const ran: string[] = [];
    worker(async (job) => {
      ran.push(job.id);
      return null;
    });
    await first.promote();
    await eventually(() => ran.length === 1);
    expect(ran).toEqual([first.id]);
    await eventually(async () => (await queue.getJobScheduler('hourly'))!.next === slotOf(first.id) + 3_600_000);
    expect((await queue.getJobs('delayed')).map((j) => slotOf(j.id))).toEqual([slotOf(first.id) + 3_600_000, slotOf(first.id) + 7_200_000]);
  });

  it('changeDelay past the following slot makes the job skipped when it fires: that slot\'s job stands for it', async () => {
    const { queue, worker } = setup(1);
    const first = (await queue.upsertJobScheduler('often', { every: 2000, startDate: Date.now() + 1000 }))!;
    const next = slotOf(first.id);
    const ran: number[] = [];
    worker(async (job) => {
      ran.push(slotOf(job.id));
      return null;
    });
    await first.changeDelay(next + 2000 + 700 - Date.now());
    await eventually(async () => Date.now() > next + 2000 + 1500 && (await first.getState()) === 'unknown', 10_000);
    expect(ran).toContain(next + 2000);
    expect(ran).not.toContain(next);
    const removed = (await redis.xrange(queue.keys.events, '-', '+')).map(([, f]) => f)
      .filter((f) => f[1] === 'removed' && f[3] === first.id);
    expect(removed).toEqual([['event', 'removed', 'jobId', first.id, 'reason', 'superseded']]);
  });
});

// Single-node: the proxy stands between the worker and one redis-server.
singleNodeDescribe('a lost reply to moveToDelayed', () => {
  it('the resend answers -2, yet the move landed: moveToDelayed resolves and the worker lets the job go', async () => {
    const proxy = await FaultyProxy.start(redisUrl());
    const admin = new Redis(redisUrl());
    closers.push(async () => {
      await proxy.close();
      await admin.quit();
    });
    // Every script is in Redis's cache before the fault: a lost NOSCRIPT reply would hide the call.
    for (const script of Object.values(SCRIPTS)) await admin.script('LOAD', script.lua);
    const name = uniqueQueueName('jclost');
    const queue = new Queue(name, { connection: redisUrl() });
    closers.push(() => queue.close());
    let outcome: unknown = 'pending';
    const worker = new Worker(name, async (job, { token }) => {
      if (job.attemptsStarted > 1) return 'next step';
      proxy.setMode('swallowReplies');
      const move = job.moveToDelayed(Date.now() + 300, token);
      await eventually(async () => (await admin.zscore(queue.keys.delayed, job.id)) !== null, 5000, 'the move to land');
      proxy.setMode('pass');
      proxy.cut(); // ioredis reconnects and sends the move again
      outcome = await move.then(() => 'resolved', (error: Error) => error);
      throw new DelayedError();
    }, { connection: proxy.url, lockDuration: 5000 });
    closers.push(() => worker.close(true));
    const reported: string[] = [];
    worker.on('lockLost', (job) => reported.push(`lockLost ${job.id}`));
    worker.on('failed', (job) => reported.push(`failed ${job.id}`));
    worker.on('completed', (job, result) => reported.push(`completed ${job.id} ${String(result)}`));
    const job = await queue.add('steps', {});
    await eventually(() => reported.length === 1, 10_000, 'the job to complete');
    expect(outcome).toBe('resolved');
    expect(reported).toEqual([`completed ${job.id} next step`]);
    expect((await queue.getJob(job.id))!.attemptsMade).toBe(1);
  });
});
