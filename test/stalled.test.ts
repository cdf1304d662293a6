import { afterAll, describe, expect, it } from '@jest/globals';
import { EchoMQError, Keys, LockManager, Queue, Worker, type JobStalledEvent, type LockRenewalFailedEvent } from '../lib/index.js';
import { eventually, newClient, testConnection, sleep, uniqueQueueName } from './support/redis.js';

function collect<T>(source: { subscribe(fn: (e: T) => void): { unsubscribe(): void } }): T[] {
  const seen: T[] = [];
  source.subscribe((event) => seen.push(event));
  return seen;
}

/** A handler that never finishes on its own: it holds the job until its signal aborts. */
const hang = async (_job: unknown, { signal }: { signal: AbortSignal }) => {
  await new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
};

describe('stalled jobs', () => {
  const client = newClient();
  afterAll(() => client.quit());

  it('renew interval over lockDuration: the lock lapses, a sweep recovers the job, a second worker runs it, the late completion fails with -2', async () => {
    const name = uniqueQueueName('lapse');
    const queue = new Queue(name, { connection: testConnection() });
    const lockManager = new LockManager();
    const stalled = collect<JobStalledEvent>(lockManager.stalled$);
    // Worker A renews every 3 s a lock that lives 1 s (the escape hatch), and finishes after 2.5 s.
    const first = new Worker(name, async () => {
      await sleep(2500);
      return 'late';
    }, { connection: testConnection(), lockManager, lockDuration: 1000, unsafeLockRenewTime: 3000, stalledInterval: 300 });
    const firstCompleted: string[] = [];
    first.on('completed', (job) => firstCompleted.push(job.id));
    const firstLost = new Promise<Error>((resolve) => first.once('lockLost', (_job, error) => resolve(error)));
    const job = await queue.add('slow', {});
    await eventually(() => lockManager.trackedCount(first.id) === 1, 5000, 'worker A holds the job');

    const second = new Worker(name, async () => 'recovered', { connection: testConnection(), lockManager, lockDuration: 1000, stalledInterval: 300 });
    const secondCompleted = new Promise<string>((resolve) => second.once('completed', (j) => resolve(j.id)));

    expect(await secondCompleted).toBe(job.id);
    expect(stalled).toEqual([expect.objectContaining({ type: 'stalled', queue: name, jobId: job.id, stalledCount: 1, movedTo: 'wait' })]);
    const error = await firstLost;
    expect(error).toBeInstanceOf(EchoMQError);
    expect((error as EchoMQError).code).toBe(-2);
    expect(firstCompleted).toEqual([]);
    const stored = await queue.getJob(job.id);
    expect(stored?.returnvalue).toBe('recovered');
    expect(stored?.stalledCounter).toBe(1);
    expect(stored?.attemptsStarted).toBe(2);
    expect(await stored?.getState()).toBe('completed');
    await Promise.all([first.close(), second.close()]);
    await lockManager.close();
    await queue.close();
  });

  it('maxStalledCount 0: the first stall fails the job with the stall reason', async () => {
    const name = uniqueQueueName('stall0');
    const queue = new Queue(name, { connection: testConnection() });
    const worker = new Worker(name, hang, { connection: testConnection(), lockDuration: 300, unsafeLockRenewTime: 600_000, stalledInterval: 200, maxStalledCount: 0 });
    const stalled = collect<JobStalledEvent>(worker.lockManager.stalled$);
    const job = await queue.add('x', {});
    await eventually(async () => (await queue.getJob(job.id))?.failedReason, 10_000, 'the job failed');
    const stored = await queue.getJob(job.id);
    expect(await stored?.getState()).toBe('failed');
    expect(stored?.failedReason).toBe('job stalled more than allowable limit');
    expect(stored?.stalledCounter).toBe(1);
    expect(stalled.map((e) => [e.jobId, e.stalledCount, e.movedTo])).toEqual([[job.id, 1, 'failed']]);
    await worker.close(true);
    await queue.close();
  });

  it('maxStalledCount 1: one stall goes back to wait, the second fails it; stc counts both; the stale ownership is let go', async () => {
    const name = uniqueQueueName('stall1');
    const queue = new Queue(name, { connection: testConnection() });
    // concurrency 2: the same worker takes the requeued job again while its first handler still hangs.
    const worker = new Worker(name, hang, { connection: testConnection(), concurrency: 2, lockDuration: 300, unsafeLockRenewTime: 600_000, stalledInterval: 200, maxStalledCount: 1 });
    const stalled = collect<JobStalledEvent>(worker.lockManager.stalled$);
    const lost = collect<LockRenewalFailedEvent>(worker.lockManager.renewalFailed$);
    const job = await queue.add('x', {});
    await eventually(async () => (await queue.getJob(job.id))?.failedReason, 10_000, 'the job failed');
    const stored = await queue.getJob(job.id);
    expect(stored?.failedReason).toBe('job stalled more than allowable limit');
    expect(stored?.stalledCounter).toBe(2);
    expect(stalled.map((e) => [e.jobId, e.stalledCount, e.movedTo])).toEqual([[job.id, 1, 'wait'], [job.id, 2, 'failed']]);
    // The second pickup under a new token ended the first ownership: its signal aborted with -6.
    expect(lost).toEqual([expect.objectContaining({ jobId: job.id, code: -6, reason: expect.stringMatching(/picked up again/) })]);
    expect(worker.lockManager.trackedCount()).toBe(1);
    await worker.close(true);
    await queue.close();
  });

  it('a healthy worker never stalls: two sweeps find the job active but its lock renewed', async () => {
    const name = uniqueQueueName('healthy');
    const queue = new Queue(name, { connection: testConnection() });
    const worker = new Worker(name, async () => {
      await sleep(2500);
      return 'ok';
      // lockDuration 1000 (renewed every 500 ms) outlives a loaded CI machine's hiccups; 400 did not
      // always. Sweeps every 300 ms: eight or so find the job active while it runs.
    }, { connection: testConnection(), lockDuration: 1000, stalledInterval: 300 });
    const stalled = collect<JobStalledEvent>(worker.lockManager.stalled$);
    const completed = new Promise((resolve) => worker.once('completed', resolve));
    const job = await queue.add('x', {});
    await completed;
    expect(stalled).toEqual([]);
    expect((await queue.getJob(job.id))?.stalledCounter).toBe(0);
    expect(await client.exists(new Keys(name).lock(job.id))).toBe(0);
    await worker.close();
    await queue.close();
  });
});

describe('a prioritized job that stalls', () => {
  it('goes back among the prioritized by its priority, not to the far end of wait (the fixed sweep LPUSHes it)', async () => {
    const name = uniqueQueueName('stall-prio');
    const queue = new Queue(name, { connection: testConnection() });
    const first = new Worker(name, hang, { connection: testConnection(), lockDuration: 300, stalledInterval: 200 });
    first.on('error', () => undefined);
    const second = new Worker(name, async () => 'ran', { connection: testConnection(), lockDuration: 300, stalledInterval: 200, autorun: false });
    try {
      const job = await queue.add('urgent', {}, { priority: 3 });
      await eventually(async () => (await job.getState()) === 'active', 5000, 'taken');
      await queue.pause(); // so that nothing takes it again before its state is read
      await first.close(true); // its lock lapses as a killed worker's does
      void second.run();
      await eventually(async () => (await job.getState()) === 'prioritized', 5000, 'back among the prioritized');
      expect((await queue.getJob(job.id))!.priority).toBe(3);
    } finally {
      await Promise.all([first.close(true), second.close(true)]);
      await queue.close();
    }
  });
});
