import 'reflect-metadata';
import { afterEach, describe, expect, it } from '@jest/globals';
import { Test } from '@nestjs/testing';
import {
  EchoMQModule, EchoMQOptionError, Process, Processor, Queue, Worker, WorkerOrchestrator, getQueueToken, type Job,
} from '../lib/index.js';
import { CloseTimeoutError } from '../lib/index.js';
import { startRedis } from './support/redis-process.js';
import { eventually, newClient, singleNodeIt, sleep, testConnection, uniqueQueueName } from './support/redis.js';
import { collect, Harness } from './support/workers.js';

// close() is bounded: no sleep of the worker (a limiter window, the error backoff) outlives it,
// and a Redis that stops answering cannot hold it past closeTimeout.
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** How long `promise` took to settle, or Infinity if it did not within `limitMs`. */
async function timed(promise: Promise<unknown>, limitMs: number): Promise<number> {
  const started = Date.now();
  let timer: NodeJS.Timeout | undefined;
  const settled = await Promise.race([
    promise.then(() => true, () => true),
    new Promise<false>((resolve) => (timer = setTimeout(resolve, limitMs, false))),
  ]);
  clearTimeout(timer);
  return settled ? Date.now() - started : Infinity;
}

describe('Worker.close(): every sleep is cut short', () => {
  it('does not wait out a rate-limiter window (an hourly limiter held it for up to an hour)', async () => {
    h = new Harness();
    const worker = h.worker(async () => 'ok', { limiter: { max: 1, duration: 60_000 } });
    const done = collect(worker, 'completed', 1);
    await h.queue.addBulk([{ name: 'first', data: 0 }, { name: 'limited', data: 0 }]);
    await done;
    await sleep(300); // the next fetch found the limiter full: the worker sleeps out its window
    expect(await timed(worker.close(), 10_000)).toBeLessThan(2000);
    expect(worker.status).toBe('closed');
    expect(await h.queue.getJobCounts('wait', 'completed')).toEqual({ wait: 1, completed: 1 });
  });

  it("does not wait out the fetch loop's error backoff", async () => {
    h = new Harness();
    const client = newClient();
    await client.set(h.queue.keys.wait, 'not a list'); // every moveToActive now fails (WRONGTYPE)
    const worker = h.worker(async () => 'never');
    // Failures at about 0, 0.1, 0.3, 0.7, 1.5 and 3.1 s; the sixth is followed by a 3.2 s backoff.
    await eventually(() => h!.errors.length >= 6, 15_000, 'six failed fetches');
    expect(await timed(worker.close(), 10_000)).toBeLessThan(1000);
    expect(h.errors[0].message).toMatch(/WRONGTYPE/);
    h.errors.length = 0;
    await client.del(h.queue.keys.wait);
    await client.quit();
  });
});

describe("Worker 'ready'", () => {
  it('is emitted after the constructor returns (autorun), so a listener added then sees it', async () => {
    h = new Harness();
    const worker = h.worker(async () => null);
    let ready = 0;
    worker.on('ready', () => ready++);
    await eventually(() => ready === 1, 5000, "'ready'");
    await sleep(100);
    expect(ready).toBe(1);
  });

  it('a worker closed at once leaves no unhandled rejection behind, and never says ready', async () => {
    const rejections: unknown[] = [];
    const onRejection = (reason: unknown) => rejections.push(reason);
    process.on('unhandledRejection', onRejection);
    try {
      const name = uniqueQueueName('at-once');
      const workers = Array.from({ length: 5 }, () => new Worker(name, async () => null, { connection: testConnection() }));
      let ready = 0;
      for (const worker of workers) worker.on('ready', () => ready++);
      await Promise.all(workers.map((worker) => worker.close()));
      // Also one that never ran, and one given up at once.
      const idle = new Worker(name, async () => null, { connection: testConnection(), autorun: false });
      await idle.close();
      const forced = new Worker(name, async () => null, { connection: testConnection() });
      await forced.close(true);
      await sleep(500);
      expect(ready).toBe(0);
      expect(rejections).toEqual([]);
    } finally {
      process.off('unhandledRejection', onRejection);
    }
  });
});

describe('closeTimeout', () => {
  it('counts only the time Redis answers nothing: while it answers, close() waits for a job longer than the bound', async () => {
    h = new Harness();
    const worker = h.worker(async () => {
      await sleep(1500);
      return 'finished';
    }, { closeTimeout: 500 });
    const done = collect(worker, 'completed', 1);
    const job = await h.queue.add('long', {});
    await eventually(() => worker.runningCount === 1, 5000, 'the job running');
    await worker.close();
    await done;
    expect(h.errors.filter((error) => error instanceof CloseTimeoutError)).toEqual([]);
    expect(await h.queue.getJob(job.id).then((stored) => [stored?.returnvalue, stored?.stalledCounter])).toEqual(['finished', 0]);
  });

  it('is validated like the other options', () => {
    for (const bad of [0, -1, 1.5, Number.NaN, 2 ** 31, '1000' as unknown as number]) {
      expect(() => new Worker('q', async () => null, { closeTimeout: bad, autorun: false, connection: testConnection() }))
        .toThrow(expect.objectContaining({ field: 'closeTimeout' }));
    }
    expect(() => new Worker('q', async () => null, { closeTimeout: 0, autorun: false })).toThrow(EchoMQOptionError);
  });

  it('defaults to 30 s; Infinity means no bound', async () => {
    const worker = new Worker(uniqueQueueName('defaults'), async () => null, { connection: testConnection(), autorun: false });
    const unbounded = new Worker(uniqueQueueName('defaults'), async () => null, { connection: testConnection(), autorun: false, closeTimeout: Infinity });
    expect(worker.options.closeTimeout).toBe(30_000);
    expect(unbounded.options.closeTimeout).toBe(Infinity);
    await Promise.all([worker.close(), unbounded.close()]);
  });

  // Single-node: stops or kills a redis-server of its own.
  singleNodeIt.each(['SIGSTOP', 'SIGKILL'] as const)(
    'bounds close() while Redis does not answer (%s): the running job is given up and the error says so',
    async (signal) => {
      const redis = await startRedis();
      const name = uniqueQueueName('unreachable');
      const queue = new Queue(name, { connection: redis.url });
      let aborted: unknown;
      const worker = new Worker(name, async (_job, { signal: jobSignal }) => {
        await new Promise<void>((resolve) => jobSignal.addEventListener('abort', () => resolve()));
        aborted = jobSignal.reason;
        return 'late';
      }, { connection: redis.url, closeTimeout: 1500, lockDuration: 5000, stalledInterval: 600_000 });
      const errors: Error[] = [];
      const lost: Job[] = [];
      worker.on('error', (error) => errors.push(error));
      worker.on('lockLost', (job) => lost.push(job));
      try {
        const job = await queue.add('held', {});
        await eventually(() => worker.runningCount === 1, 5000, 'the job running');
        // SIGSTOP: the socket stays open and nothing answers; SIGKILL: the server is gone.
        process.kill(redis.pid(), signal);
        const took = await timed(worker.close(), 10_000);
        expect(took).toBeGreaterThanOrEqual(1400);
        expect(took).toBeLessThan(4000);
        expect(worker.status).toBe('closed');
        const timeout = errors.find((error) => error instanceof CloseTimeoutError) as CloseTimeoutError | undefined;
        expect(timeout?.jobIds).toEqual([job.id]);
        expect(timeout?.message).toMatch(/closeTimeout \(1500 ms\)/);
        expect(timeout?.message).toContain(`(${job.id})`);
        await eventually(() => aborted !== undefined, 2000, 'the job signal aborted');
        expect(aborted).toBe(timeout);
        await eventually(() => lost.length === 1, 2000, 'lockLost');
        if (signal === 'SIGSTOP') {
          process.kill(redis.pid(), 'SIGCONT');
          // Given up, not finished: the job stays active until its lock lapses and a sweep takes it back.
          expect(await job.getState()).toBe('active');
        }
      } finally {
        if (signal === 'SIGSTOP') process.kill(redis.pid(), 'SIGCONT');
        await queue.close();
        await redis.stop();
      }
    },
    20_000,
  );
});

describe('closeTimeout in Nest', () => {
  // Single-node: stops a redis-server of its own.
  singleNodeIt('app.close() returns while Redis does not answer: the drain is bounded, then the shared connection is dropped', async () => {
    const redis = await startRedis();
    const name = uniqueQueueName('nest-unreachable');
    let aborted = false;
    @Processor(name)
    class Holds {
      @Process() async run(_job: Job, { signal }: { signal: AbortSignal }) {
        await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve()));
        aborted = true;
      }
    }
    const app = await Test.createTestingModule({
      imports: [
        EchoMQModule.forRoot({ connection: redis.url, worker: { closeTimeout: 1500, stalledInterval: 600_000 } }),
        EchoMQModule.registerQueue(name),
      ],
      providers: [Holds],
    }).compile();
    app.useLogger(false);
    await app.init();
    let stopped = false;
    try {
      const queue = app.get<Queue>(getQueueToken(name), { strict: false });
      const worker = app.get(WorkerOrchestrator, { strict: false }).getWorker(name)!;
      const errors: Error[] = [];
      worker.on('error', (error) => errors.push(error));
      await queue.add('held', {});
      await eventually(() => worker.runningCount === 1, 5000, 'the job running');
      process.kill(redis.pid(), 'SIGSTOP');
      stopped = true;
      // The workers' drain (closeTimeout), then at most the QUIT wait of the shared connection.
      const took = await timed(app.close(), 15_000);
      expect(took).toBeLessThan(1500 + 5000 + 1500);
      expect(errors.some((error) => error instanceof CloseTimeoutError)).toBe(true);
      expect(aborted).toBe(true);
    } finally {
      if (stopped) process.kill(redis.pid(), 'SIGCONT');
      await redis.stop();
    }
  }, 30_000);
});
