import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { Redis, type Cluster } from 'ioredis';
import { Queue, Worker, type Job } from '../lib/index.js';
import { SCRIPTS } from '../lib/protocol/script-registry.js';
import { startRedis, type RedisProcess } from './support/redis-process.js';
import { hasFastProperties } from './support/fast-properties.js';
import { masters, newClient, onCluster, queueKeys, testConnection, uniqueQueueName } from './support/redis.js';

// Finishes and concurrent adds are gathered into one script call per turn of the event loop
// (FinishBatcher, Queue.add). These tests count the calls on a private server, so no other test's
// commands are in the count, and check that batching loses, repeats or mixes up nothing. The
// cluster run counts on the run's Cluster, summed over its masters: the suite runs one file at a
// time, so only this file's commands are there meanwhile.
let redis: RedisProcess | undefined;
let admin: Redis | Cluster;

/** What each queue and worker connects with: the private server's URL, or a Cluster of its own. */
const connection = () => redis?.url ?? testConnection();

beforeAll(async () => {
  if (onCluster) {
    admin = newClient();
    return;
  }
  redis = await startRedis();
  admin = new Redis(redis.url);
});
afterAll(async () => {
  admin.disconnect();
  await redis?.stop();
});
beforeEach(async () => {
  for (const server of await masters(admin)) await server.config('RESETSTAT');
});

async function scriptCalls(): Promise<number> {
  let total = 0;
  for (const server of await masters(admin)) {
    const stats = await server.info('commandstats');
    const calls = (name: string) => Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(stats)?.[1] ?? 0);
    total += calls('evalsha') + calls('eval');
  }
  return total;
}

describe('a worker at concurrency above 1', () => {
  it('finishes its jobs in batches: each job runs once, with fewer script calls than jobs', async () => {
    const name = uniqueQueueName('batch');
    const queue = new Queue(name, { connection: connection() });
    const jobs = 400;
    await queue.addBulk(Array.from({ length: jobs }, (_, i) => ({ name: 'n', data: { i } })));
    const ran = new Map<number, number>();
    const worker = new Worker<{ i: number }>(name, (job) => {
      ran.set(job.data.i, (ran.get(job.data.i) ?? 0) + 1);
      return job.data.i * 2;
    }, { connection: connection(), concurrency: 20 });
    const results = new Map<number, unknown>();
    await new Promise<void>((resolve) => worker.on('completed', (job: Job, result) => {
      results.set((job.data as { i: number }).i, result);
      if (results.size === jobs) resolve();
    }));
    await worker.close();
    // Without batching every job costs at least one call (its finish); addBulk costs one.
    expect(await scriptCalls()).toBeLessThan(jobs / 2);
    expect([...ran.values()].every((n) => n === 1) && ran.size === jobs).toBe(true);
    for (const [i, result] of results) expect(result).toBe(i * 2);
    const counts = await queue.getJobCounts('wait', 'active', 'completed', 'failed');
    expect(counts).toEqual({ wait: 0, active: 0, completed: jobs, failed: 0 });
    expect((await queueKeys(admin, name)).filter((key) => key.endsWith(':lock'))).toEqual([]);
    const stored = await queue.getJob('7');
    expect([stored?.returnvalue, stored?.attemptsMade, stored?.attemptsStarted]).toEqual([12, 1, 1]);
    await queue.close();
  });

  it('sends its retries with its finishes: jobs that fail once each take fewer script calls than jobs, each attempt counted once', async () => {
    const name = uniqueQueueName('retry-batch');
    const queue = new Queue(name, { connection: connection() });
    const jobs = 200;
    // One in two with a backoff: back through delayed, the others straight back to wait.
    await queue.addBulk(Array.from({ length: jobs }, (_, i) => ({
      name: 'n', data: { i }, opts: { attempts: 3, ...(i % 2 === 0 && { backoff: { type: 'fixed', delay: 20 } }) },
    })));
    const runs = new Map<number, number>();
    const worker = new Worker<{ i: number }>(name, (job) => {
      runs.set(job.data.i, (runs.get(job.data.i) ?? 0) + 1);
      if (job.attemptsMade === 0) throw new Error('the first attempt fails');
      return job.data.i;
    }, { connection: connection(), concurrency: 20 });
    let retried = 0;
    worker.on('failed', (_job, _error, willRetry) => { if (willRetry) retried++; });
    let completed = 0;
    await new Promise<void>((resolve) => worker.on('completed', () => { if (++completed === jobs) resolve(); }));
    await worker.close();
    // One retryJob-12 per job and one pickup per slot it freed cost two calls a job or more.
    expect(await scriptCalls()).toBeLessThan(jobs / 2);
    expect(retried).toBe(jobs);
    expect([...runs.values()].every((n) => n === 2) && runs.size === jobs).toBe(true);
    expect(await queue.getJobCounts('wait', 'active', 'delayed', 'completed', 'failed')).toEqual({ wait: 0, active: 0, delayed: 0, completed: jobs, failed: 0 });
    const [plain, backedOff] = [await queue.getJob('1'), await queue.getJob('2')];
    expect([plain?.attemptsMade, plain?.attemptsStarted, plain?.failedReason]).toEqual([2, 2, 'the first attempt fails']);
    expect([backedOff?.attemptsMade, backedOff?.stacktrace.length]).toEqual([2, 1]);
    await queue.close();
  });

  it('one job that lost its lock in a batch is reported lost; the others of the batch complete', async () => {
    const name = uniqueQueueName('lost');
    const queue = new Queue(name, { connection: connection() });
    await queue.addBulk([{ name: 'a', data: {} }, { name: 'b', data: {} }, { name: 'c', data: {} }]);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let started = 0;
    const worker = new Worker(name, async () => {
      if (++started === 3) {
        await admin.set(`emq:{${name}}:2:lock`, 'another-worker'); // job 2 ('b') changes hands
        release();
      }
      await gate;
    }, { connection: connection(), concurrency: 3 });
    const completed: string[] = [];
    const lost: Array<[string, string]> = [];
    worker.on('completed', (job) => completed.push(job.id));
    worker.on('lockLost', (job, error) => lost.push([job.id, error.message]));
    await new Promise<void>((resolve) => {
      const check = () => completed.length + lost.length === 3 && resolve();
      worker.on('completed', check);
      worker.on('lockLost', check);
    });
    await worker.close();
    expect(completed.sort()).toEqual(['1', '3']);
    expect(lost).toEqual([['2', expect.stringContaining('held by another token')]]);
    expect(await admin.lrange(`emq:{${name}}:active`, 0, -1)).toEqual(['2']);
    expect(await admin.get(`emq:{${name}}:2:lock`)).toBe('another-worker');
    await queue.close();
  });

  it('the processor context keeps its signal when spread or copied', async () => {
    const name = uniqueQueueName('ctx');
    const queue = new Queue(name, { connection: connection() });
    const worker = new Worker(name, (_job, context) => {
      const copy = { ...context };
      return [copy.signal instanceof AbortSignal, copy.signal.aborted, typeof copy.token];
    }, { connection: connection() });
    const result = new Promise((resolve) => worker.once('completed', (_job, value) => resolve(value)));
    await queue.add('x', {});
    expect(await result).toEqual([true, false, 'string']);
    await worker.close();
    await queue.close();
  });

  it("every job's processor context keeps V8's fast properties: one shared signal getter, not a new one per job", async () => {
    // A getter written in an object literal is a new function per run: V8 then gave every context
    // slow (dictionary) properties and an accessor pair of its own in the old generation, which
    // kept each job's whole run alive past the young-generation collections (bench/README.md,
    // "Where EchoMQ's time goes"). %HasFastProperties tells the two apart.
    const name = uniqueQueueName('ctx-shape');
    const queue = new Queue(name, { connection: connection() });
    const shapes: boolean[] = [];
    const worker = new Worker(name, (_job, context) => {
      shapes.push(hasFastProperties(context));
    }, { connection: connection(), concurrency: 4 });
    const done = new Promise((resolve) => worker.on('completed', () => shapes.length === 8 && resolve(undefined)));
    await queue.addBulk(Array.from({ length: 8 }, (_, i) => ({ name: 'x', data: { i } })));
    await done;
    expect(shapes).toEqual(Array(8).fill(true));
    await worker.close();
    await queue.close();
  });
});

describe('Queue.add called many times at once', () => {
  it('sends the burst as one addJobs-9 call per 500 jobs, ids in call order, each job as add would write it', async () => {
    const name = uniqueQueueName('adds');
    const queue = new Queue(name, { connection: connection() });
    await queue.add('warm-up', {}); // the first call on a fresh server also loads the script
    // addJobs-9 too, wherever the queue's slot lives: a cold cache adds a NOSCRIPT round per call.
    for (const server of await masters(admin)) await server.script('LOAD', SCRIPTS.addJobs.lua);
    const before = await scriptCalls();
    const jobs = await Promise.all(Array.from({ length: 1200 }, (_, i) => queue.add('n', { i }, i === 5 ? { delay: 60_000 } : {})));
    expect(await scriptCalls() - before).toBe(4); // the first add alone, then 500 + 500 + 199
    expect(jobs.map((job) => job.id)).toEqual(Array.from({ length: 1200 }, (_, i) => String(i + 2)));
    expect(await admin.llen(`emq:{${name}}:wait`)).toBe(1200); // the warm-up and 1,199
    const delayed = await admin.zrange(`emq:{${name}}:delayed`, '0', '-1', 'WITHSCORES');
    const stored = await queue.getJob('7');
    expect(delayed).toEqual(['7', String(stored!.timestamp + 60_000)]);
    expect(stored!.timestamp).toBe(jobs[5].timestamp); // its own add's time, wherever it stood in the batch
    await queue.close();
  });

  it('close() in the same turn as add() calls still sends them before the connection closes', async () => {
    const name = uniqueQueueName('close');
    const queue = new Queue(name, { connection: connection() });
    await queue.add('warm-up', {});
    const added = [queue.add('a', {}), queue.add('b', {}), queue.add('c', {})];
    await queue.close();
    expect((await Promise.all(added)).map((job) => job.id)).toEqual(['2', '3', '4']);
    expect(await admin.llen(`emq:{${name}}:wait`)).toBe(4);
  });

  it('a custom id that exists answers with the existing job, in a burst as alone', async () => {
    const name = uniqueQueueName('dup');
    const queue = new Queue(name, { connection: connection() });
    await queue.add('first', { v: 1 }, { jobId: 'order-7' });
    const [a, b, c] = await Promise.all([
      queue.add('n', { v: 2 }),
      queue.add('again', { v: 3 }, { jobId: 'order-7' }),
      queue.add('n', { v: 4 }),
    ]);
    expect([a.id, b.id, c.id]).toEqual(['1', 'order-7', '2']);
    expect([b.name, b.data]).toEqual(['first', { v: 1 }]);
    await queue.close();
  });
});
