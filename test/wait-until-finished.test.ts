import { afterEach, describe, expect, it } from '@jest/globals';
import { EchoMQOptionError, JobNotFoundError, Queue, QueueEvents, Worker } from '../lib/index.js';
import { eventually, testConnection, uniqueQueueName } from './support/redis.js';

// waitUntilFinished without a timeout settles for every job, even one already gone.
let queue: Queue;
let events: QueueEvents;
let worker: Worker | undefined;
afterEach(async () => {
  await worker?.close();
  worker = undefined;
  await events.close();
  await queue.close();
});

/** The queue, and its QueueEvents unless `later` (then the test opens it once the job is gone, so the stream's live reads cannot tell). */
function open(later = false) {
  const name = uniqueQueueName('wuf');
  queue = new Queue(name, { connection: testConnection() });
  if (!later) events = new QueueEvents(name, { connection: testConnection() });
  return name;
}

/** The promise's outcome, or 'still waiting' after 3 s: a wait that never settles fails the test instead of hanging it. */
function settled<T>(promise: Promise<T>): Promise<{ value: T } | { error: unknown } | 'still waiting'> {
  return Promise.race([
    promise.then((value) => ({ value }), (error: unknown) => ({ error })),
    new Promise<'still waiting'>((resolve) => setTimeout(() => resolve('still waiting'), 3000).unref()),
  ]);
}

describe('waitUntilFinished of a job that is gone', () => {
  it('settles with the result of a job removed on completion before the call', async () => {
    const name = open(true);
    worker = new Worker(name, async () => ({ sum: 3 }), { connection: testConnection() });
    const job = await queue.add('sum', {}, { removeOnComplete: true });
    await eventually(async () => (await queue.getJob(job.id)) === undefined, 10_000, 'the job done and removed');
    events = new QueueEvents(name, { connection: testConnection() });
    expect(await settled(job.waitUntilFinished(events))).toEqual({ value: { sum: 3 } });
  });

  it('settles with the failure of a job removed on failure before the call', async () => {
    const name = open(true);
    worker = new Worker(name, async () => { throw new Error('it broke'); }, { connection: testConnection() });
    const job = await queue.add('bad', {}, { removeOnFail: true });
    await eventually(async () => (await queue.getJob(job.id)) === undefined, 10_000, 'the job failed and removed');
    events = new QueueEvents(name, { connection: testConnection() });
    const outcome = await settled(job.waitUntilFinished(events));
    expect((outcome as { error: Error }).error.message).toBe('it broke');
  });

  it('rejects with JobNotFoundError for a job removed before it finished, before or during the wait', async () => {
    open();
    const before = await queue.add('a', {});
    await before.remove();
    const outcome = await settled(before.waitUntilFinished(events));
    expect((outcome as { error: Error }).error).toBeInstanceOf(JobNotFoundError);
    expect((outcome as { error: Error }).error.message).toMatch(new RegExp(`job ${before.id} of queue .* no longer exists`));

    const during = await queue.add('b', {});
    await events.waitUntilReady();
    const waiting = settled(during.waitUntilFinished(events));
    await new Promise((resolve) => setTimeout(resolve, 100));
    await during.remove();
    expect(((await waiting) as { error: Error }).error).toBeInstanceOf(JobNotFoundError);
  });

  it('refuses the QueueEvents of another queue, which would never tell', async () => {
    open();
    const job = await queue.add('a', {});
    const other = new QueueEvents(uniqueQueueName('other'), { connection: testConnection() });
    try {
      await expect(job.waitUntilFinished(other, 1000)).rejects.toThrow(EchoMQOptionError);
    } finally {
      await other.close();
    }
  });
});
