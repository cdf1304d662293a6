import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { Redis } from 'ioredis';
import {
  EchoMQOptionError, JobCancelledError, LockManager, Queue, Worker, type Job, type JobCancelledEvent,
} from '../lib/index.js';
import { SCRIPTS } from '../lib/internal.js';
import { partitionOf } from '../lib/protocol/partitions.js';
import { CancelWatch } from '../lib/runtime/worker/cancel-watch.js';
import { startRedis, type RedisProcess } from './support/redis-process.js';
import {
  eventually, newClient, redisUrl, singleNodeDescribe, sleep, testConnection, uniqueQueueName,
} from './support/redis.js';
import { monitorCommands } from './support/monitor.js';
import { snapshot } from './support/scripts.js';
import { collect, Harness } from './support/workers.js';

// queue.cancelJob (issue 14; docs/locks.md, "Cancelling a job"; docs/protocol.md, "Cancelling
// jobs"): a job still to run fails at once as cancelled, not retried; a running job, on any worker
// of any process, has its signal aborted within one lockRenewTime (+ 100 ms) and fails as cancelled,
// not retried; a job whose worker died fails at its next pickup without running. Workers pay
// nothing for it while nobody cancels.

const client = newClient();
afterAll(() => client.quit());

let h: Harness | undefined;
afterEach(async () => {
  const used = h;
  h = undefined;
  if (!used) return;
  await used.close();
  expect(used.errors).toEqual([]);
});

/** The `failed` events of the queue's stream, as [jobId, failedReason]. */
async function failedEvents(queue: Queue): Promise<string[][]> {
  const entries = await client.xrange(queue.keys.events, '-', '+');
  return entries.map(([, f]) => f).filter((f) => f[1] === 'failed').map((f) => [f[3], f[5]]);
}

/** A handler that waits for its signal and rejects with its reason; `started` resolves with each job. */
function waitsForSignal(onStart: (job: Job) => void = () => undefined, aborted: Array<{ jobId: string; at: number; reason: unknown }> = []) {
  return (job: Job, { signal }: { signal: AbortSignal }) => {
    onStart(job);
    return new Promise((_, reject) => signal.addEventListener('abort', () => {
      aborted.push({ jobId: job.id, at: Date.now(), reason: signal.reason });
      reject(signal.reason);
    }));
  };
}

describe('queue.cancelJob: jobs still to run fail at once', () => {
  it('a waiting job: true, failed as cancelled with its reason, not retried, never run; the failed event says why', async () => {
    h = new Harness();
    const job = await h.queue.add('w', {}, { attempts: 5 });
    expect(await h.queue.cancelJob(job.id, 'not needed')).toBe(true);
    const stored = (await h.queue.getJob(job.id))!;
    expect(await stored.getState()).toBe('failed');
    expect(stored.failedReason).toBe(`job ${job.id} was cancelled: not needed`);
    expect(stored.attemptsMade).toBe(0);
    expect(stored.finishedOn).toBeGreaterThan(0);
    expect(await failedEvents(h.queue)).toEqual([[job.id, `job ${job.id} was cancelled: not needed`]]);
    // A worker started afterwards runs the next job and never this one.
    const ran: string[] = [];
    const worker = h.worker(async (j) => ran.push(j.id));
    const next = await h.queue.add('next', {});
    await collect(worker, 'completed', 1);
    expect(ran).toEqual([next.id]);
    expect(await h.queue.cancelJob(job.id)).toBe(false); // finished now
  });

  it('a delayed, a prioritized and a paused-queue job, without a reason', async () => {
    h = new Harness();
    const delayed = await h.queue.add('d', {}, { delay: 60_000, attempts: 3 });
    const prioritized = await h.queue.add('p', {}, { priority: 4, attempts: 3 });
    await h.queue.pause();
    const paused = await h.queue.add('q', {}, { attempts: 3 });
    expect(await h.queue.getJobCounts('delayed', 'prioritized', 'paused')).toEqual({ delayed: 1, prioritized: 1, paused: 1 });
    for (const job of [delayed, prioritized, paused]) expect(await h.queue.cancelJob(job.id)).toBe(true);
    expect(await h.queue.getJobCounts('delayed', 'prioritized', 'paused', 'failed')).toEqual({ delayed: 0, prioritized: 0, paused: 0, failed: 3 });
    for (const job of [delayed, prioritized, paused]) {
      expect((await h.queue.getJob(job.id))!.failedReason).toBe(`job ${job.id} was cancelled`);
    }
  });

  it('removeOnFail is honoured: true removes the job, a count keeps the newest', async () => {
    h = new Harness();
    const gone = await h.queue.add('g', {}, { removeOnFail: true });
    expect(await h.queue.cancelJob(gone.id)).toBe(true);
    expect(await h.queue.getJob(gone.id)).toBeUndefined();
    expect(await failedEvents(h.queue)).toEqual([[gone.id, `job ${gone.id} was cancelled`]]);
    const kept = [];
    for (let i = 0; i < 3; i++) kept.push(await h.queue.add('k', {}, { removeOnFail: 2 }));
    for (const job of kept) expect(await h.queue.cancelJob(job.id)).toBe(true);
    expect((await h.queue.getJobs('failed')).map((j) => j.id).sort()).toEqual(kept.slice(1).map((j) => j.id).sort());
  });

  it('a finished job and a missing one: false, and nothing is written', async () => {
    h = new Harness();
    const worker = h.worker(async (job) => {
      if (job.name === 'bad') throw new Error('boom');
      return 'ok';
    });
    const completed = collect(worker, 'completed', 1);
    const failed = collect(worker, 'failed', 1);
    const done = await h.queue.add('good', {});
    const bad = await h.queue.add('bad', {});
    await Promise.all([completed, failed]);
    await worker.close();
    const before = await snapshot(client, h.queue.keys);
    expect(await h.queue.cancelJob(done.id)).toBe(false);
    expect(await h.queue.cancelJob(bad.id, 'too late')).toBe(false);
    expect(await h.queue.cancelJob('no-such-job')).toBe(false);
    expect(await h.queue.cancelJob('wait')).toBe(false); // a name that cannot be a job's
    expect(await snapshot(client, h.queue.keys)).toEqual(before);
    expect((await h.queue.getJob(bad.id))!.failedReason).toBe('boom');
  });

  it('bad input is refused naming the field, before Redis is touched', async () => {
    h = new Harness();
    const job = await h.queue.add('x', {});
    const before = await snapshot(client, h.queue.keys);
    for (const [jobId, reason, field] of [
      [42, undefined, 'jobId'], ['', undefined, 'jobId'], [undefined, undefined, 'jobId'],
      [job.id, 7, 'reason'], [job.id, 'x'.repeat(1001), 'reason'], [job.id, null, 'reason'],
    ] as Array<[unknown, unknown, string]>) {
      const refusal = await h.queue.cancelJob(jobId as string, reason as string).then(() => undefined, (error: unknown) => error);
      expect(refusal).toBeInstanceOf(EchoMQOptionError);
      expect((refusal as EchoMQOptionError).field).toBe(field);
    }
    expect(await snapshot(client, h.queue.keys)).toEqual(before);
    expect(await h.queue.cancelJob(job.id, 'x'.repeat(1000))).toBe(true); // the longest reason taken
  });

  it('a job scheduler\'s pending job: failed as cancelled; the schedule goes on with its following slot', async () => {
    h = new Harness();
    const every = 400;
    const next = await h.queue.upsertJobScheduler('tick', { every });
    expect(await h.queue.cancelJob(next!.id, 'skip this one')).toBe(true);
    expect((await h.queue.getJob(next!.id))!.failedReason).toBe(`job ${next!.id} was cancelled: skip this one`);
    const ran: string[] = [];
    const worker = h.worker(async (job) => ran.push(job.id), { lockDuration: 1000, stalledInterval: 500 });
    await collect(worker, 'completed', 2);
    expect(ran).not.toContain(next!.id);
    expect((await h.queue.getJobScheduler('tick'))?.next).toBeGreaterThan(Date.now() - every);
    await h.queue.removeJobScheduler('tick');
  });
});

describe('queue.cancelJob: a running job', () => {
  it('another Worker of this process: its signal aborts within lockRenewTime + 100 ms, the job fails as cancelled, not retried; cancelled$ says by queue', async () => {
    h = new Harness();
    const lockManager = new LockManager();
    const cancels: JobCancelledEvent[] = [];
    lockManager.cancelled$.subscribe((event) => cancels.push(event));
    const aborted: Array<{ jobId: string; at: number; reason: unknown }> = [];
    const worker = h.worker(waitsForSignal(undefined, aborted), { lockDuration: 1000, lockManager, concurrency: 2 });
    const failures: Array<{ job: Job; error: Error; willRetry: boolean }> = [];
    worker.on('failed', (job, error, willRetry) => failures.push({ job, error, willRetry }));
    const job = await h.queue.add('long', {}, { attempts: 4 });
    const other = await h.queue.add('other', {}, { attempts: 4 });
    await eventually(() => worker.runningCount === 2, 5000, 'both running');
    const sentAt = Date.now();
    expect(await h.queue.cancelJob(job.id, 'the user asked')).toBe(true);
    await eventually(() => failures.length === 1, 3000, 'the job failed');
    expect(aborted).toHaveLength(1);
    expect(aborted[0].jobId).toBe(job.id);
    expect(aborted[0].at - sentAt).toBeLessThanOrEqual(500 + 100);
    expect(aborted[0].reason).toBeInstanceOf(JobCancelledError);
    expect(failures[0]).toMatchObject({ willRetry: false });
    expect(failures[0].error).toBeInstanceOf(JobCancelledError);
    const stored = (await h.queue.getJob(job.id))!;
    expect(await stored.getState()).toBe('failed');
    expect(stored.failedReason).toBe(`job ${job.id} was cancelled: the user asked`);
    expect(stored.attemptsMade).toBe(1);
    expect(cancels).toEqual([expect.objectContaining({ jobId: job.id, reason: 'the user asked', by: 'queue', workerId: worker.id })]);
    expect(worker.runningCount).toBe(1); // the other job runs on
    expect(await (await h.queue.getJob(other.id))!.getState()).toBe('active');
    expect(await h.queue.cancelJob(job.id)).toBe(false); // finished now
    await worker.close(true);
    await lockManager.close();
  });

  it('a handler that ignores its signal: the job fails all the same, its late result refused', async () => {
    h = new Harness();
    let finish!: (value: string) => void;
    const worker = h.worker(() => new Promise<string>((resolve) => (finish = resolve)), { lockDuration: 600 });
    const job = await h.queue.add('stubborn', {}, { attempts: 2 });
    await eventually(() => worker.runningCount === 1, 5000, 'running');
    const [failed] = await Promise.all([collect(worker, 'failed', 1), h.queue.cancelJob(job.id)]);
    expect(failed[0].id).toBe(job.id);
    finish('too late');
    await sleep(100);
    const stored = (await h.queue.getJob(job.id))!;
    expect(await stored.getState()).toBe('failed');
    expect(stored.returnvalue ?? null).toBeNull();
  });

  it('a partitioned queue: a waiting and a running job outside partition 0, the running one aborted within lockRenewTime + 100 ms', async () => {
    const name = uniqueQueueName('pcxl');
    const partitions = 3;
    const key = ['a', 'b', 'c', 'd', 'e', 'f', 'g'].find((k) => partitionOf(k, partitions) === 2)!;
    const queue = new Queue(name, { connection: testConnection(), partitions });
    const aborted: Array<{ jobId: string; at: number; reason: unknown }> = [];
    const worker = new Worker(name, waitsForSignal(undefined, aborted), { connection: testConnection(), partitions, lockDuration: 1000 });
    try {
      const waiting = await queue.add('w', {}, { partitionKey: key, delay: 60_000, attempts: 3 });
      expect(await queue.cancelJob(waiting.id, 'w')).toBe(true);
      expect((await queue.getJob(waiting.id))!.failedReason).toBe(`job ${waiting.id} was cancelled: w`);
      const running = await queue.add('r', {}, { partitionKey: key, attempts: 3 });
      await eventually(() => worker.runningCount === 1, 5000, 'running');
      const sentAt = Date.now();
      expect(await queue.cancelJob(running.id, 'r')).toBe(true);
      await eventually(() => aborted.length === 1, 3000, 'aborted');
      expect(aborted[0].at - sentAt).toBeLessThanOrEqual(500 + 100);
      await eventually(async () => (await queue.getJob(running.id))?.failedReason === `job ${running.id} was cancelled: r`, 3000, 'failed as cancelled');
      // The mark was in partition 2; the count the workers read is partition 0's.
      expect(await client.hget(queue.partitionKeys[0].meta, 'cancels')).toBe('1');
      expect(await client.hget(queue.partitionKeys[2].meta, 'cancels')).toBe('1');
    } finally {
      await worker.close(true);
      await queue.close();
    }
  });
});

// Worker processes of their own: the BUILT library, compiled once into a private folder (as
// test/limits-processes.test.ts does), one Worker each (test/support/cancel-worker-process.mjs).
singleNodeDescribe('queue.cancelJob across processes', () => {
  const lib = resolve('node_modules/.cache/echomq-cancel-test');
  const script = resolve('test/support/cancel-worker-process.mjs');
  const children: ChildProcess[] = [];
  const queues: Queue[] = [];

  beforeAll(() => {
    execFileSync('npx', ['tsc', '-p', 'tsconfig.build.json', '--outDir', lib], { stdio: 'inherit' });
  }, 180_000);
  afterEach(async () => {
    for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    for (const queue of queues.splice(0)) await queue.close();
  });

  function newQueue(): Queue {
    const queue = new Queue(uniqueQueueName('xcxl'), { connection: redisUrl() });
    queues.push(queue);
    return queue;
  }

  /** A worker process on `queue`, once its worker runs; `lines` fills with what it prints. */
  async function startWorker(queue: Queue, options: Record<string, unknown>): Promise<{ child: ChildProcess; lines: string[] }> {
    const child = spawn(process.execPath, [script, `${lib}/lib/index.js`, redisUrl(), queue.name, JSON.stringify(options)], { stdio: ['ignore', 'pipe', 'inherit'] });
    children.push(child);
    const lines: string[] = [];
    await new Promise<void>((ready, reject) => {
      let buffered = '';
      child.stdout!.on('data', (chunk: Buffer) => {
        buffered += chunk.toString();
        const complete = buffered.split('\n');
        buffered = complete.pop()!;
        for (const line of complete) {
          lines.push(line);
          if (line.startsWith('ready ')) ready();
        }
      });
      child.once('exit', (code) => reject(new Error(`worker process exited (${code}) before it was ready: ${lines.join(' | ')}`)));
    });
    return { child, lines };
  }

  const linesOf = (lines: string[], kind: string) => lines.filter((line) => line.startsWith(`${kind} `)).map((line) => line.split(' '));

  it('cancels of running jobs reach the worker of another process within lockRenewTime + 100 ms; each fails as cancelled, not retried', async () => {
    const queue = newQueue();
    const lockDuration = 1000; // lockRenewTime 500
    const { lines } = await startWorker(queue, { concurrency: 5, lockDuration });
    const jobs = await Promise.all(Array.from({ length: 5 }, (_, i) => queue.add(`j${i}`, {}, { attempts: 3 })));
    await eventually(() => linesOf(lines, 'start').length === 5, 5000, 'five handlers started');
    const delays: number[] = [];
    for (const [i, job] of jobs.entries()) {
      // Spread over the heartbeat interval: some cancels land just after a tick, some just before.
      await sleep(130 + i * 37);
      const sentAt = Date.now();
      expect(await queue.cancelJob(job.id, `stop ${i}`)).toBe(true);
      const abort = (await eventually(() => linesOf(lines, 'abort').find((l) => l[1] === job.id), 3000, `the abort of ${job.id}`))!;
      expect(abort[3]).toBe('JobCancelledError');
      delays.push(Number(abort[2]) - sentAt);
    }
    expect(Math.max(...delays)).toBeLessThanOrEqual(500 + 100);
    await eventually(async () => (await queue.getJobCounts('failed')).failed === 5, 3000, 'five failed');
    for (const [i, job] of jobs.entries()) {
      const stored = (await queue.getJob(job.id))!;
      expect(stored.failedReason).toBe(`job ${job.id} was cancelled: stop ${i}`);
      expect(stored.attemptsMade).toBe(1);
      expect(stored.attemptsStarted).toBe(1); // not run again
    }
    expect(linesOf(lines, 'cancelled').map((l) => l[2])).toEqual(['queue', 'queue', 'queue', 'queue', 'queue']);
    expect(linesOf(lines, 'error')).toEqual([]);
    console.log(`cancelJob → abort in the other process (lockRenewTime 500 ms): ${delays.join(', ')} ms`);
  }, 30_000);

  it('a waiting job cancelled from this process is never run by the other', async () => {
    const queue = newQueue();
    const { lines } = await startWorker(queue, { concurrency: 1, lockDuration: 1000 });
    const blocker = await queue.add('blocker', {});
    await eventually(() => linesOf(lines, 'start').length === 1, 5000, 'the blocker running');
    const waiting = await queue.add('waiting', {}, { attempts: 3 });
    expect(await queue.cancelJob(waiting.id, 'changed my mind')).toBe(true);
    expect(await queue.cancelJob(blocker.id)).toBe(true);
    await eventually(async () => (await queue.getJobCounts('failed')).failed === 2, 3000, 'both failed');
    await sleep(200);
    expect(linesOf(lines, 'start').map((l) => l[1])).toEqual([blocker.id]);
    expect((await queue.getJob(waiting.id))!.failedReason).toBe(`job ${waiting.id} was cancelled: changed my mind`);
  }, 30_000);

  it('a running job whose worker was killed: marked, given back by the sweep, failed at its next pickup without running', async () => {
    const queue = newQueue();
    // Its stalled-check guard (PX stalledInterval) would hold the next sweep back: short on both sides.
    const { child, lines } = await startWorker(queue, { concurrency: 1, lockDuration: 1000, stalledInterval: 300, ignoreSignal: true });
    const job = await queue.add('orphan', {}, { attempts: 3 });
    await eventually(() => linesOf(lines, 'start').length === 1, 5000, 'running');
    child.kill('SIGKILL');
    await new Promise((done) => child.once('exit', done));
    expect(await queue.cancelJob(job.id, 'its worker is gone')).toBe(true); // its lock is still there: marked
    expect(await client.hget(queue.keys.job(job.id), 'cxl')).toBe('its worker is gone');
    const ran: string[] = [];
    const local = new Worker(queue.name, async (j) => ran.push(j.id), { connection: redisUrl(), lockDuration: 1000, stalledInterval: 300 });
    try {
      const failed = await Promise.race([
        new Promise<Job>((done) => local.once('failed', (failedJob) => done(failedJob))),
        sleep(10_000).then(() => undefined),
      ]);
      expect(failed?.id).toBe(job.id);
      expect(ran).toEqual([]);
      const stored = (await queue.getJob(job.id))!;
      expect(await stored.getState()).toBe('failed');
      expect(stored.failedReason).toBe(`job ${job.id} was cancelled: its worker is gone`);
      expect(stored.attemptsStarted).toBe(2); // the killed run and the pickup that failed it
      expect(stored.stalledCounter).toBe(1);
    } finally {
      await local.close();
    }
  }, 30_000);
});

// MONITOR on a redis-server of this file's own: every command the worker sends, and nothing else's.
singleNodeDescribe('what a worker sends for cancels (MONITOR)', () => {
  let redis: RedisProcess;
  let admin: Redis;
  beforeAll(async () => {
    redis = await startRedis();
    admin = new Redis(redis.url);
    for (const s of Object.values(SCRIPTS)) await admin.script('LOAD', s.lua);
  });
  afterAll(async () => {
    admin.disconnect();
    await redis.stop();
  });

  it('nothing while nobody cancels (the counter rides the tick\'s HMGET); one cancelledAmong-1 after a cancel', async () => {
    const name = uniqueQueueName('mon');
    const queue = new Queue(name, { connection: redis.url });
    const lines: Array<{ source: string; args: string[] }> = [];
    const stopMonitor = await monitorCommands(admin.options.host ?? '127.0.0.1', admin.options.port ?? 6379, (args, source) => {
      if (source !== 'lua') lines.push({ source, args: [args[0].toLowerCase(), ...args.slice(1)] });
    });
    const worker = new Worker(name, waitsForSignal(), { connection: redis.url, lockDuration: 600, stalledInterval: 600_000, concurrency: 2 });
    try {
      const [held, other] = await Promise.all([queue.add('held', {}), queue.add('other', {})]);
      await eventually(() => worker.runningCount === 2, 5000, 'running');
      await sleep(400); // past the first tick, which opens the renewal connection (its handshake)
      lines.length = 0;
      await sleep(1000); // three ticks or so (lockRenewTime 300), nobody cancelling
      const quiet = lines.map((l) => (l.args[0] === 'evalsha' ? `evalsha ${l.args[1]}` : l.args[0]));
      const ticks = quiet.filter((c) => c === 'hmget').length;
      expect(ticks).toBeGreaterThanOrEqual(2); // a loaded machine may fire one late
      // Each tick: the renewal, the registry write, the read of the limits and the counter: nothing else.
      expect([...new Set(quiet)].sort()).toEqual([`evalsha ${SCRIPTS.extendLocks.sha}`, 'hmget', 'set', 'zadd'].sort());
      expect(quiet.filter((c) => c === `evalsha ${SCRIPTS.extendLocks.sha}`)).toHaveLength(ticks);
      expect(lines.find((l) => l.args[0] === 'hmget')!.args.slice(2)).toEqual(['concurrency', 'rateLimitMax', 'rateLimitDuration', 'rateLimitedUntil', 'cancels']);

      lines.length = 0;
      const failed = collect(worker, 'failed', 1);
      await queue.cancelJob(held.id);
      await failed;
      await sleep(700);
      const looks = lines.filter((l) => l.args[0] === 'evalsha' && l.args[1] === SCRIPTS.cancelledAmong.sha);
      expect(looks).toHaveLength(1);
      // KEYS[1] meta, then the prefix and the ids the worker held: both jobs.
      expect(looks[0].args.slice(2, 5)).toEqual(['1', queue.keys.meta, queue.keys.base]);
      expect(looks[0].args.slice(5).sort()).toEqual([held.id, other.id].sort());
    } finally {
      await worker.close(true);
      stopMonitor();
      await queue.close();
    }
  });
});

describe('CancelWatch (the worker\'s reading of the counter)', () => {
  /** A lane's locks holding `held` (id → when its pickup was sent); records each look. */
  function fakeLocks(held: Map<string, number>) {
    const looks: string[][] = [];
    let fail = false;
    const locks = {
      idsAcquiredBy: (time: number) => [...held].filter(([, at]) => at <= time).map(([id]) => id),
      cancelMarked: (ids: string[]) => {
        looks.push(ids);
        return fail ? Promise.reject(new Error('no answer')) : Promise.resolve([]);
      },
    };
    return { locks, looks, held, failNext: (value: boolean) => (fail = value) };
  }

  it('looks only after the count changed, at the jobs taken before it was read, each once; a pickup in flight then is looked at when it lands', async () => {
    const a = fakeLocks(new Map());
    const b = fakeLocks(new Map());
    const errors: Error[] = [];
    const watch = new CancelWatch([a.locks, b.locks], (error) => errors.push(error));
    watch.read(null, 100); // the start: nothing held
    a.held.set('1', 150);
    a.held.set('2', 160);
    watch.read(null, 200);
    watch.read('0', 300); // never set reads as 0: no change
    expect(a.looks).toEqual([]);
    watch.read('1', 400); // changed: both jobs were taken before
    expect(a.looks).toEqual([['1', '2']]);
    expect(b.looks).toEqual([]); // holds nothing
    a.held.set('3', 390); // its pickup was sent before the count was read, its reply came after the look
    a.held.set('4', 450); // sent after: it carried any mark itself
    watch.read('1', 500);
    expect(a.looks).toEqual([['1', '2'], ['3']]);
    watch.read('1', 600);
    expect(a.looks).toHaveLength(2); // each job once per count
    a.held.delete('1');
    a.failNext(true);
    watch.read('2', 700);
    await sleep(0);
    expect(a.looks.at(-1)).toEqual(['2', '3', '4']);
    expect(errors.map((e) => e.message)).toEqual(['no answer']);
    a.failNext(false);
    watch.read('2', 800); // the failed look is made again
    expect(a.looks.at(-1)).toEqual(['2', '3', '4']);
    expect(a.looks).toHaveLength(4);
  });
});
