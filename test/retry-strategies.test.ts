import { afterAll, afterEach, describe, expect, it } from '@jest/globals';
import { EchoMQOptionError, Queue, Worker, type BackoffStrategy, type Job, type JobOptions } from '../lib/index.js';
import { backoffDelay } from '../lib/internal.js';
import { eventually, newClient, testConnection, uniqueQueueName } from './support/redis.js';
import { snapshot } from './support/scripts.js';
import { collect, Harness, HarnessPerTest } from './support/workers.js';

// Retries and backoff (docs/reliability.md, "Retries and backoff"): jitter, a worker's custom
// strategy, an error's retryAfter, and the options refused before Redis is touched.

const client = newClient();
afterAll(async () => {
  await client.quit();
});

const harnesses = new HarnessPerTest();
let h: Harness;

/**
 * The waits a job's retries were given, each as a bracket: retryJob-12 sets dueAt = now + wait,
 * with `now` read between the handler's throw and the 'failed' event, so the wait lies in
 * [dueAt − failedAt, dueAt − threwAt]. No assumption about speed: only the order of the clocks.
 */
interface Bracket { low: number; high: number }

/** Records when each attempt of the harness's jobs threw and when the worker reported it failed. */
class AttemptClock {
  readonly threwAt: number[] = [];
  readonly failedAt: number[] = [];

  constructor(worker: Worker) {
    worker.on('failed', () => this.failedAt.push(Date.now()));
  }

  /** Throws `error` from a handler, noting the time first. */
  throw(error: Error): never {
    this.threwAt.push(Date.now());
    throw error;
  }

  /** The waits of the job's delayed retries, from the 'delayed' events retryJob-12 wrote. */
  async waits(jobId: string): Promise<Bracket[]> {
    const dueTimes = (await delayedEvents(jobId)).map((fields) => Number(fields.delay));
    return dueTimes.map((dueAt, i) => ({ low: dueAt - this.failedAt[i], high: dueAt - this.threwAt[i] }));
  }
}

/** The events stream's entries of one kind for one job of the harness's queue, as field maps. */
async function eventsOf(event: string, jobId: string): Promise<Array<Record<string, string>>> {
  const entries = await client.xrange(h.queue.keys.events, '-', '+');
  return entries
    .map(([, flat]) => Object.fromEntries(flat.flatMap((_, i) => (i % 2 === 0 ? [[flat[i], flat[i + 1]]] : []))) as Record<string, string>)
    .filter((fields) => fields.event === event && fields.jobId === jobId);
}

const delayedEvents = (jobId: string) => eventsOf('delayed', jobId);

/** Asserts a retry's wait could only have been from `min` to `max` ms. */
function expectWait(bracket: Bracket, min: number, max: number): void {
  expect(bracket.high).toBeGreaterThanOrEqual(min);
  expect(bracket.low).toBeLessThanOrEqual(max);
}

/** An error such as an HTTP client throws for a 429, with the wait the server asked for. */
function tooManyRequests(retryAfter: unknown): Error {
  return Object.assign(new Error('429 Too Many Requests'), { retryAfter });
}

/** Resolves with the first job the worker fails for good. */
function finalFailure(worker: Worker): Promise<Job> {
  return new Promise((resolve) => worker.on('failed', (job, _error, willRetry) => { if (!willRetry) resolve(job); }));
}

describe('backoffDelay: the built-in types and their jitter', () => {
  const lowest = () => 0;
  const high = () => 0.999;

  it('shortens a fixed wait by up to the jitter fraction, never lengthens it', () => {
    const backoff = { type: 'fixed', delay: 1000, jitter: 0.5 } as const;
    expect(backoffDelay(backoff, 1, lowest)).toBe(500);
    expect(backoffDelay(backoff, 1, high)).toBe(999);
    expect(backoffDelay(backoff, 1, () => 0.5)).toBe(750);
    expect(backoffDelay({ type: 'fixed', delay: 1000, jitter: 1 }, 3, lowest)).toBe(0);
  });

  it('jitters an exponential wait from its doubled value', () => {
    const backoff = { type: 'exponential', delay: 100, jitter: 0.25 } as const;
    expect(backoffDelay(backoff, 3, lowest)).toBe(300); // 400 less a quarter
    expect(backoffDelay(backoff, 3, high)).toBe(399);
    expect(backoffDelay({ type: 'exponential', delay: 100 }, 3, lowest)).toBe(400);
  });

  it('no jitter (0 or absent) is the exact wait; a custom type is left to the worker (undefined)', () => {
    expect(backoffDelay({ type: 'fixed', delay: 700, jitter: 0 }, 1, lowest)).toBe(700);
    expect(backoffDelay(250, 4, lowest)).toBe(250);
    expect(backoffDelay(undefined, 1)).toBe(0);
    expect(backoffDelay(null as never, 1)).toBe(0); // as another runtime may write "none"
    expect(backoffDelay({ type: 'linear', delay: 100 }, 1)).toBeUndefined();
  });
});

describe('jitter against Redis', () => {
  it('keeps each exponential wait between (1 − jitter) × its doubled value and that value', async () => {
    h = harnesses.start();
    let clock!: AttemptClock;
    const worker = h.worker(async (job) => {
      if (job.attemptsMade < 3) clock.throw(new Error(`attempt ${job.attemptsMade + 1}`));
      return 'ok';
    });
    clock = new AttemptClock(worker);
    const done = collect(worker, 'completed', 1);
    const job = await h.queue.add('j', {}, { attempts: 4, backoff: { type: 'exponential', delay: 200, jitter: 0.5 } });
    await done;
    const waits = await clock.waits(job.id);
    expect(waits).toHaveLength(3);
    // Up to the doubled value itself: Math.random() may come close enough to 1 to round up to it.
    expectWait(waits[0], 100, 200);
    expectWait(waits[1], 200, 400);
    expectWait(waits[2], 400, 800);
  });

  it('draws a fresh wait for each retry of a fixed backoff', async () => {
    h = harnesses.start();
    let clock!: AttemptClock;
    const worker = h.worker(async (job) => {
      if (job.attemptsMade < 5) clock.throw(new Error('again'));
      return 'ok';
    });
    clock = new AttemptClock(worker);
    const done = collect(worker, 'completed', 1);
    // jitter 0.99, not 1: a draw of 0 ms (1 in 400 with jitter 1) sends the retry to wait, which
    // writes no 'delayed' event, so waits() would pair the later events with the wrong attempts.
    const job = await h.queue.add('j', {}, { attempts: 6, backoff: { type: 'fixed', delay: 400, jitter: 0.99 } });
    await done;
    const waits = await clock.waits(job.id);
    expect(waits).toHaveLength(5);
    for (const wait of waits) expectWait(wait, 0, 400);
    // Five draws from [0, 400) that all fit one bracket's width would mean no draw at all.
    const spread = Math.max(...waits.map((w) => w.low)) - Math.min(...waits.map((w) => w.high));
    expect(spread).toBeGreaterThan(0);
  });
});

describe('a custom backoff strategy (settings.backoffStrategy)', () => {
  it('is called for a custom type with attemptsMade, the type, the error and the job, and its ms are the wait', async () => {
    h = harnesses.start();
    const calls: Array<[number, string, string, string]> = [];
    const backoffStrategy: BackoffStrategy = (attemptsMade, type, error, job) => {
      calls.push([attemptsMade, type, error.message, job.id]);
      return attemptsMade * 150;
    };
    let clock!: AttemptClock;
    const worker = h.worker(async (job) => {
      if (job.attemptsMade < 2) clock.throw(new Error(`attempt ${job.attemptsMade + 1}`));
      return 'ok';
    }, { settings: { backoffStrategy } });
    clock = new AttemptClock(worker);
    const done = collect(worker, 'completed', 1);
    const job = await h.queue.add('j', {}, { attempts: 3, backoff: { type: 'linear' } });
    await done;
    expect(calls).toEqual([[1, 'linear', 'attempt 1', job.id], [2, 'linear', 'attempt 2', job.id]]);
    const waits = await clock.waits(job.id);
    expectWait(waits[0], 150, 150);
    expectWait(waits[1], 300, 300);
    expect((await h.queue.getJob(job.id))?.attemptsMade).toBe(3);
  });

  it('may answer with a promise', async () => {
    h = harnesses.start();
    let clock!: AttemptClock;
    const worker = h.worker(async (job) => {
      if (job.attemptsMade < 1) clock.throw(new Error('once'));
      return 'ok';
    }, { settings: { backoffStrategy: async () => { await new Promise((r) => setTimeout(r, 50)); return 250; } } });
    clock = new AttemptClock(worker);
    const done = collect(worker, 'completed', 1);
    const job = await h.queue.add('j', {}, { attempts: 2, backoff: { type: 'slow-api' } });
    await done;
    const [wait] = await clock.waits(job.id);
    expectWait(wait, 250, 250);
  });

  it('0 retries at once: back to wait, not to delayed', async () => {
    h = harnesses.start();
    const worker = h.worker(async (job) => {
      if (job.attemptsMade < 1) throw new Error('once');
      return 'ok';
    }, { settings: { backoffStrategy: () => 0 } });
    const done = collect(worker, 'completed', 1);
    const job = await h.queue.add('j', {}, { attempts: 2, backoff: { type: 'now' } });
    await done;
    expect(await delayedEvents(job.id)).toEqual([]);
    expect((await eventsOf('waiting', job.id)).filter((e) => e.prev === 'failed')).toHaveLength(1);
  });

  it('-1 fails the job for good now, whatever attempts are left, with the attempt\'s own reason', async () => {
    h = harnesses.start();
    let runs = 0;
    const worker = h.worker(async () => { runs++; throw new Error('card declined'); }, { settings: { backoffStrategy: () => -1 } });
    const retried: boolean[] = [];
    worker.on('failed', (_job, _error, willRetry) => retried.push(willRetry));
    const failed = finalFailure(worker);
    const job = await h.queue.add('j', {}, { attempts: 5, backoff: { type: 'give-up' } });
    await failed;
    const stored = await h.queue.getJob(job.id);
    expect(await stored?.getState()).toBe('failed');
    expect(stored?.failedReason).toBe('card declined');
    expect(stored?.attemptsMade).toBe(1);
    expect(runs).toBe(1);
    expect(retried).toEqual([false]);
  });

  it('one that throws fails the job for good naming its error; the worker goes on with other jobs', async () => {
    h = harnesses.start();
    const worker = h.worker(async (job) => {
      if (job.name === 'fails') throw new Error('upstream down');
      return 'ok';
    }, { settings: { backoffStrategy: () => { throw new RangeError('no table for this type'); } } });
    const failed = finalFailure(worker);
    const job = await h.queue.add('fails', {}, { attempts: 3, backoff: { type: 'table' } });
    const failedJob = await failed;
    expect(failedJob.failedReason).toMatch(/^upstream down \(not retried: settings\.backoffStrategy threw for backoff type "table": RangeError: no table for this type\)$/);
    const stored = await h.queue.getJob(job.id);
    expect(await stored?.getState()).toBe('failed');
    expect(stored?.failedReason).toBe(failedJob.failedReason);
    expect(stored?.attemptsMade).toBe(1);
    const done = collect(worker, 'completed', 1);
    await h.queue.add('fine', {});
    expect((await done)[0].name).toBe('fine');
  });

  it.each([
    ['a fraction', 1.5],
    ['NaN', Number.NaN],
    ['below -1', -2],
    ['a string', '100'],
    ['nothing', undefined],
    ['Infinity', Infinity],
  ])('an answer that is %s fails the job for good, saying what it answered', async (_label, answer) => {
    h = harnesses.start();
    const worker = h.worker(async () => { throw new Error('boom'); }, { settings: { backoffStrategy: () => answer as number } });
    const failed = finalFailure(worker);
    const job = await h.queue.add('j', {}, { attempts: 3, backoff: { type: 'odd' } });
    await failed;
    const stored = await h.queue.getJob(job.id);
    expect(await stored?.getState()).toBe('failed');
    expect(stored?.attemptsMade).toBe(1);
    expect(stored?.failedReason).toContain('boom (not retried: settings.backoffStrategy answered ');
    expect(stored?.failedReason).toContain('for backoff type "odd"; it must answer a whole number of ms, 0 (retry at once) or -1 (no retry)');
  });

  it('is not asked about the built-in types, nor when the job has no attempts left', async () => {
    h = harnesses.start();
    const asked: string[] = [];
    const worker = h.worker(async (job) => {
      if (job.attemptsMade < 1) throw new Error('once');
      return 'ok';
    }, { settings: { backoffStrategy: (_n, type) => { asked.push(type); return 0; } } });
    const done = collect(worker, 'completed', 2);
    const failed = finalFailure(worker);
    await h.queue.add('fixed', {}, { attempts: 2, backoff: { type: 'fixed', delay: 10 } });
    await h.queue.add('exp', {}, { attempts: 2, backoff: { type: 'exponential', delay: 10 } });
    const last = await h.queue.add('last', {}, { attempts: 1, backoff: { type: 'custom' } });
    await Promise.all([done, failed]);
    expect(asked).toEqual([]);
    expect((await h.queue.getJob(last.id))?.failedReason).toBe('once');
  });

  it('a custom type on a worker without a strategy fails the job for good, naming the type', async () => {
    h = harnesses.start();
    let runs = 0;
    const worker = h.worker(async () => { runs++; throw new Error('nope'); });
    const failed = finalFailure(worker);
    const job = await h.queue.add('j', {}, { attempts: 4, backoff: { type: 'linear', delay: 100 } });
    await failed;
    const stored = await h.queue.getJob(job.id);
    expect(await stored?.getState()).toBe('failed');
    expect(stored?.failedReason).toBe('nope (not retried: backoff type "linear" is a custom one and this worker has no settings.backoffStrategy to resolve it)');
    expect(stored?.attemptsMade).toBe(1);
    expect(runs).toBe(1);
  });
});

describe("an error's retryAfter", () => {
  it('replaces the backoff for that attempt only', async () => {
    h = harnesses.start();
    let clock!: AttemptClock;
    const worker = h.worker(async (job) => {
      if (job.attemptsMade === 0) clock.throw(tooManyRequests(300));
      if (job.attemptsMade === 1) clock.throw(new Error('plain failure'));
      return 'ok';
    });
    clock = new AttemptClock(worker);
    const failures: boolean[] = [];
    worker.on('failed', (_job, _error, willRetry) => failures.push(willRetry));
    const job = await h.queue.add('j', {}, { attempts: 3, backoff: { type: 'fixed', delay: 60_000 } });
    await eventually(async () => (await delayedEvents(job.id)).length === 2, 10_000, 'two delayed retries');
    const waits = await clock.waits(job.id);
    expectWait(waits[0], 300, 300);
    expectWait(waits[1], 60_000, 60_000); // the next attempt's plain error takes the backoff again
    expect(failures).toEqual([true, true]);
  });

  it('wins over a custom strategy, which is then not asked', async () => {
    h = harnesses.start();
    const asked: number[] = [];
    let clock!: AttemptClock;
    const worker = h.worker(async (job) => {
      if (job.attemptsMade === 0) clock.throw(tooManyRequests(200));
      return 'ok';
    }, { settings: { backoffStrategy: (n) => { asked.push(n); return -1; } } });
    clock = new AttemptClock(worker);
    const done = collect(worker, 'completed', 1);
    const job = await h.queue.add('j', {}, { attempts: 2, backoff: { type: 'never' } });
    await done;
    expect(asked).toEqual([]);
    expectWait((await clock.waits(job.id))[0], 200, 200);
  });

  it('0, or a time already past (negative), retries at once; a fraction of a ms is rounded up', async () => {
    h = harnesses.start();
    let clock!: AttemptClock;
    const retryAfter: number[] = [0, -5000, 120.2];
    const worker = h.worker(async (job) => {
      if (job.attemptsMade < 3) clock.throw(tooManyRequests(retryAfter[job.attemptsMade]));
      return 'ok';
    });
    clock = new AttemptClock(worker);
    const done = collect(worker, 'completed', 1);
    const job = await h.queue.add('j', {}, { attempts: 4, backoff: 60_000 });
    await done;
    expect((await eventsOf('waiting', job.id)).filter((e) => e.prev === 'failed')).toHaveLength(2);
    const delayed = await delayedEvents(job.id);
    expect(delayed).toHaveLength(1);
    // The third failure is the only delayed one: its bracket uses that failure's clock readings.
    const dueAt = Number(delayed[0].delay);
    expectWait({ low: dueAt - clock.failedAt[2], high: dueAt - clock.threwAt[2] }, 121, 121);
  });

  it('is ignored when the job has no attempts left: it fails for good at once', async () => {
    h = harnesses.start();
    let runs = 0;
    const worker = h.worker(async () => { runs++; throw tooManyRequests(100); });
    const failed = finalFailure(worker);
    const job = await h.queue.add('j', {}, { attempts: 1 });
    await failed;
    const stored = await h.queue.getJob(job.id);
    expect(await stored?.getState()).toBe('failed');
    expect(stored?.failedReason).toBe('429 Too Many Requests');
    expect(runs).toBe(1);
  });

  it.each([
    ['a string', '30'],
    ['NaN', Number.NaN],
    ['a Date', new Date()],
  ])('one that is %s fails the job for good, naming retryAfter', async (_label, retryAfter) => {
    h = harnesses.start();
    const worker = h.worker(async () => { throw tooManyRequests(retryAfter); });
    const failed = finalFailure(worker);
    const job = await h.queue.add('j', {}, { attempts: 3, backoff: 10 });
    await failed;
    const stored = await h.queue.getJob(job.id);
    expect(stored?.attemptsMade).toBe(1);
    expect(stored?.failedReason).toMatch(/^429 Too Many Requests \(not retried: the error's retryAfter is .+; it must be a number of ms\)$/);
  });
});

describe('bad backoff options and settings are refused, nothing written', () => {
  let queue: Queue | undefined;
  afterEach(async () => {
    await queue?.close();
    queue = undefined;
  });

  const bad: Array<[string, JobOptions['backoff'] | Record<string, unknown>]> = [
    ['backoff.jitter', { type: 'fixed', delay: 100, jitter: 1.5 }],
    ['backoff.jitter', { type: 'exponential', delay: 100, jitter: -0.1 }],
    ['backoff.jitter', { type: 'fixed', delay: 100, jitter: '0.2' }],
    ['backoff.jitter', { type: 'fixed', delay: 100, jitter: Number.NaN }],
    ['backoff.jitter', { type: 'my-own', jitter: 2 }],
    ['backoff.delay', { type: 'fixed', delay: -1 }],
    ['backoff.delay', { type: 'my-own', delay: 2.5 }],
    ['backoff.type', { type: '', delay: 100 }],
    ['backoff.type', { type: 42, delay: 100 }],
    ['backoff.type', { delay: 100 }],
    ['backoff', -10],
  ];

  it.each(bad)('add refuses a bad %s (%p)', async (field, backoff) => {
    queue = new Queue(uniqueQueueName('bo'), { connection: testConnection() });
    await queue.add('seed', {});
    const before = await snapshot(client, queue.keys);
    for (const add of [
      () => queue!.add('x', {}, { attempts: 3, backoff: backoff as JobOptions['backoff'] }),
      () => queue!.addBulk([{ name: 'ok', data: {} }, { name: 'x', data: {}, opts: { backoff: backoff as JobOptions['backoff'] } }]),
    ]) {
      const error = await add().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(EchoMQOptionError);
      expect((error as EchoMQOptionError).field).toMatch(new RegExp(`(^|\\.)${field.replace('.', '\\.')}$`));
    }
    expect(await snapshot(client, queue.keys)).toEqual(before);
  });

  /** What `make` threw, or undefined; whatever it made is closed (it should have made nothing). */
  async function refusal(make: () => { close(): Promise<void> }): Promise<unknown> {
    try {
      await make().close();
    } catch (error) {
      return error;
    }
    return undefined;
  }

  it('a Queue refuses a bad backoff in its defaultJobOptions', async () => {
    const error = await refusal(() => new Queue(uniqueQueueName(), {
      connection: testConnection(), defaultJobOptions: { backoff: { type: 'fixed', delay: 1, jitter: 3 } },
    }));
    expect(error).toBeInstanceOf(EchoMQOptionError);
    expect((error as EchoMQOptionError).field).toBe('defaultJobOptions.backoff.jitter');
  });

  it('accepts any custom type name, and jitter at 0 and 1', async () => {
    queue = new Queue(uniqueQueueName('bo'), { connection: testConnection() });
    const jobs = await queue.addBulk([
      { name: 'a', data: {}, opts: { attempts: 2, backoff: { type: 'linear' } } },
      { name: 'b', data: {}, opts: { attempts: 2, backoff: { type: 'fixed', delay: 10, jitter: 0 } } },
      { name: 'c', data: {}, opts: { attempts: 2, backoff: { type: 'exponential', delay: 10, jitter: 1 } } },
    ]);
    expect((await queue.getJob(jobs[0].id))?.opts.backoff).toEqual({ type: 'linear' });
  });

  it.each([
    ['settings.backoffStrategy', { backoffStrategy: 'exponential' }],
    ['settings.backoffStrategy', { backoffStrategy: { fixed: 100 } }],
    ['settings', 5],
    ['settings', null],
  ])('a Worker refuses a bad %s (%p) when made', async (field, settings) => {
    const caught = await refusal(() => new Worker(uniqueQueueName('bo'), async () => 1, { connection: testConnection(), settings: settings as never }));
    expect(caught).toBeInstanceOf(EchoMQOptionError);
    expect((caught as EchoMQOptionError).field).toBe(field);
    expect((caught as Error).message).toMatch(/^settings(\.backoffStrategy)?: must be (a function|an object)/);
  });
});
