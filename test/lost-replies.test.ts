import { afterAll, afterEach, beforeAll, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { CloseTimeoutError, Keys, LockManager, Queue, Worker, type Job } from '../lib/index.js';
import { Scripts } from '../lib/protocol/scripts.js';
import { SCRIPTS } from '../lib/protocol/script-registry.js';
import { FaultyProxy } from './support/faulty-proxy.js';
import { eventually, redisUrl, singleNodeDescribe, sleep, uniqueQueueName } from './support/redis.js';

// A finishing script whose reply is lost: the worker must tell "my finish landed" from "my lock
// lapsed and the job moved on" by what Redis holds, never by the state alone, and must not strand
// the jobs a lost fetch-next reply handed over. The faults are real: a TCP proxy between the
// worker and Redis loses the bytes.
let proxy: FaultyProxy;
let admin: Redis;
const closers: Array<() => Promise<unknown>> = [];

// Single-node: the proxy stands between a worker and one redis-server.
singleNodeDescribe('a lost reply to a finishing script', () => {
  beforeAll(async () => {
    admin = new Redis(redisUrl());
    proxy = await FaultyProxy.start(redisUrl());
    // Every script is in Redis's cache before a fault: a lost NOSCRIPT reply would hide the call.
    for (const script of Object.values(SCRIPTS)) await admin.script('LOAD', script.lua);
  });
  afterEach(async () => {
    proxy.setMode('pass');
    while (closers.length > 0) await closers.pop()!().catch(() => undefined);
  });
  afterAll(async () => {
    await proxy.close();
    await admin.quit();
  });

  it('a retry that never landed, while a sweep moved the job back to wait, is reported lost, not retried', async () => {
    const name = uniqueQueueName('lostretry');
    const queue = new Queue(name, { connection: redisUrl() });
    closers.push(() => queue.close());
    // The user's own connection, with ioredis's default of failing a command when a reconnect
    // fails: the worker's finish then sees an error and tries again itself.
    const userConnection = new Redis(proxy.url, { maxRetriesPerRequest: 0, retryStrategy: () => 50 });
    userConnection.on('error', () => undefined);
    closers.push(async () => userConnection.disconnect());
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const worker = new Worker(name, async (job) => {
      if (job.attemptsStarted === 1) {
        await gate;
        throw new Error('first attempt fails');
      }
      return 'second attempt';
    }, { connection: userConnection, lockDuration: 1000, stalledInterval: 60_000 });
    worker.on('error', () => undefined);
    closers.push(() => worker.close(true));
    const reported: string[] = [];
    worker.on('failed', (job, _error, willRetry) => reported.push(`failed ${job.id} willRetry=${willRetry}`));
    worker.on('lockLost', (job) => reported.push(`lockLost ${job.id}`));
    worker.on('completed', (job) => reported.push(`completed ${job.id}`));

    const job = await queue.add('j', {}, { attempts: 3, backoff: 60_000 });
    await eventually(async () => (await job.getState()) === 'active', 5000, 'the job to be active');
    // The retry is sent into a dead connection, and the worker cannot reach Redis for 2.5 s.
    proxy.setMode('drop');
    release();
    await sleep(50);
    proxy.cut();

    // Meanwhile its lock lapses and a stalled sweep elsewhere moves the job back to wait.
    const keys = new Keys(name);
    const sweeper = new Scripts(admin, keys, 10_000);
    // The worker's own sweep set the once-per-interval guard at its start: this sweep stands in
    // for another worker's, so it clears the guard first.
    await admin.del(keys.stalledCheck);
    await sweeper.moveStalledJobsToWait(1, Date.now(), 50);
    await eventually(async () => (await admin.exists(keys.lock(job.id))) === 0, 5000, 'the lock to lapse');
    await admin.del(keys.stalledCheck);
    const swept = await sweeper.moveStalledJobsToWait(1, Date.now(), 50);
    expect(swept.movedToWait.map((m) => m.jobId)).toEqual([job.id]);
    await sleep(1000);
    proxy.setMode('pass');

    await eventually(() => reported.includes(`completed ${job.id}`), 10_000, 'the second attempt to complete');
    // The retry never reached Redis: no attempt was counted for it and no backoff applied. The
    // worker says it lost the job; it must not claim a retry that Redis never recorded.
    expect(reported).toEqual([`lockLost ${job.id}`, `completed ${job.id}`]);
    const stored = await queue.getJob(job.id);
    expect([stored?.attemptsMade, stored?.attemptsStarted, stored?.stalledCounter]).toEqual([1, 2, 1]);
  });

  it('a lost batch reply: the finished jobs count as completed and the jobs its fetch-next took run at once', async () => {
    const name = uniqueQueueName('lostbatch');
    const queue = new Queue(name, { connection: redisUrl() });
    closers.push(() => queue.close());
    const concurrency = 8;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const runs = new Map<string, number>();
    const worker = new Worker(name, async (job) => {
      runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
      if (Number(job.id) <= concurrency) await gate;
      return job.id;
    }, { connection: proxy.url, concurrency, lockDuration: 20_000, stalledInterval: 60_000, closeTimeout: 3000 });
    const errors: Error[] = [];
    worker.on('error', (error) => errors.push(error));
    closers.push(() => worker.close(true));
    const completed: string[] = [];
    const lost: string[] = [];
    worker.on('completed', (job: Job) => completed.push(job.id));
    worker.on('lockLost', (job: Job) => lost.push(job.id));

    const total = 3 * concurrency;
    await queue.addBulk(Array.from({ length: total }, () => ({ name: 'j', data: {} })));
    await eventually(() => runs.size === concurrency, 5000, 'the first jobs to run');
    // The first jobs finish together (finishJobs-13 batches with fetch-next); their replies are
    // lost, then the connection drops and ioredis sends the same calls again.
    proxy.setMode('swallowReplies');
    release();
    await eventually(async () => (await queue.getJobCounts('completed')).completed === concurrency, 5000, 'the batches to land');
    await sleep(100);
    proxy.setMode('pass');
    proxy.cut();

    // Every job completes well within lockDuration: none waits for its lock to lapse.
    await eventually(() => completed.length === total, 8000, `all ${total} jobs to complete`);
    expect(lost).toEqual([]);
    expect([...runs.values()].every((n) => n === 1)).toBe(true);
    const jobs = await queue.getJobs('completed');
    expect(jobs.map((j) => j.stalledCounter).every((stc) => stc === 0)).toBe(true);
    expect(jobs.length).toBe(total);
    // Its idle wait was sent again by ioredis after the reconnect: close still ends it at once.
    await worker.close();
    expect(errors.filter((error) => error instanceof CloseTimeoutError)).toEqual([]);
  });

  it('a pickup sent twice after a lost reply: the job the first send took runs too, at once', async () => {
    const name = uniqueQueueName('lostpickup');
    const queue = new Queue(name, { connection: redisUrl() });
    closers.push(() => queue.close());
    const completed: string[] = [];
    const worker = new Worker(name, async (job) => job.id, {
      connection: proxy.url, concurrency: 2, lockDuration: 20_000, stalledInterval: 60_000,
    });
    worker.on('error', () => undefined);
    worker.on('completed', (job: Job) => completed.push(job.id));
    closers.push(() => worker.close(true));
    await worker.waitUntilReady();
    await sleep(100); // the idle worker's first fetch found nothing

    // A delayed job: the idle worker's own timer sends moveToActive when it is due. Its reply is
    // lost; a second job is ready by then, so ioredis's resend after the reconnect takes it.
    const delayed = await queue.add('delayed', {}, { delay: 500 });
    await sleep(200);
    proxy.setMode('swallowReplies');
    const ready = await queue.add('ready', {});
    await eventually(async () => (await queue.getJobCounts('active')).active === 1, 3000, 'the lost pickup to land');
    await sleep(100);
    proxy.setMode('pass');
    proxy.cut();

    await eventually(() => completed.length === 2, 5000, 'both jobs to complete');
    expect(completed.sort()).toEqual([delayed.id, ready.id].sort());
    const jobs = await queue.getJobs('completed');
    expect(jobs.map((j) => [j.attemptsStarted, j.stalledCounter])).toEqual([[1, 0], [1, 0]]);
  });

  it('reports each tick that waited a whole interval, and aborts the job once its lock can no longer be shown alive', async () => {
    const name = uniqueQueueName('silentbeat');
    const queue = new Queue(name, { connection: redisUrl() });
    closers.push(() => queue.close());
    const lockManager = new LockManager();
    const heartbeatErrors: string[] = [];
    const renewalFailures: string[] = [];
    lockManager.heartbeatError$.subscribe((e) => heartbeatErrors.push(e.error.message));
    lockManager.renewalFailed$.subscribe((e) => renewalFailures.push(`${e.jobId} ${e.code}`));
    let aborted: unknown;
    const worker = new Worker(name, async (_job, { signal }) => {
      await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve()));
      aborted = signal.reason;
    }, { connection: proxy.url, lockManager, lockDuration: 1000, lockRenewTime: 300, stalledInterval: 60_000 });
    worker.on('error', () => undefined);
    closers.push(() => worker.close(true));
    const job = await queue.add('j', {});
    await eventually(() => lockManager.trackedCount(worker.id) === 1, 5000, 'the job to be tracked');
    // The renewal connection is opened at the first tick: it can never connect, so each tick's
    // pipeline waits offline for ever. The worker's shared connection goes on working.
    proxy.setMode('refuseNew');

    await eventually(() => renewalFailures.length === 1, 4000, 'the job to be given up');
    expect(renewalFailures).toEqual([`${job.id} -2`]);
    expect(heartbeatErrors.length).toBeGreaterThanOrEqual(2);
    expect(heartbeatErrors[0]).toMatch(/no answer within lockRenewTime \(300 ms\)/);
    await eventually(() => aborted !== undefined, 2000, 'the signal to abort');
    expect(String(aborted)).toMatch(/no renewal of its lock was confirmed for lockDuration/);
  });
});
