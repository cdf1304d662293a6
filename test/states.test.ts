import { afterEach, describe, expect, it } from '@jest/globals';
import { EchoMQOptionError, Queue } from '../lib/index.js';
import { testConnection, uniqueQueueName } from './support/redis.js';

// Every method that takes a state takes BullMQ's `waiting` for `wait` and refuses what is not a
// state; getJob answers undefined for an id that cannot name a job.
let queue: Queue;
afterEach(async () => {
  await queue.obliterate({ force: true });
  await queue.close();
});

async function refusal(call: Promise<unknown>): Promise<EchoMQOptionError> {
  const error = await call.then(() => undefined, (thrown: unknown) => thrown);
  expect(error).toBeInstanceOf(EchoMQOptionError);
  return error as EchoMQOptionError;
}

describe('states by name', () => {
  it('takes `waiting` as `wait` in getJobs and getJobCounts, keyed as asked', async () => {
    queue = new Queue(uniqueQueueName('st'), { connection: testConnection() });
    const [a, b] = await queue.addBulk([{ name: 'a', data: 1 }, { name: 'b', data: 2 }]);
    expect((await queue.getJobs('waiting')).map((job) => job.id)).toEqual([a.id, b.id]);
    expect((await queue.getJobs(['waiting', 'completed'])).map((job) => job.id)).toEqual([a.id, b.id]);
    expect(await queue.getJobCounts('waiting', 'active')).toEqual({ waiting: 2, active: 0 });
    expect(await queue.getJobCounts('wait')).toEqual({ wait: 2 });
    expect(await queue.getJobCounts()).toEqual({ wait: 2, paused: 0, prioritized: 0, active: 0, delayed: 0, completed: 0, failed: 0, 'waiting-children': 0 });
  });

  it('refuses a state that is not one, naming where', async () => {
    queue = new Queue(uniqueQueueName('st'), { connection: testConnection() });
    await queue.add('a', {});
    expect((await refusal(queue.getJobs('bogus' as never))).field).toBe('states');
    expect((await refusal(queue.getJobs(['wait', 'meta'] as never))).field).toBe('states[1]');
    const counts = await refusal(queue.getJobCounts('wait', 'events' as never));
    expect(counts.field).toBe('states[1]');
    expect(counts.message).toMatch(/use one of wait, paused, prioritized, active, delayed, completed, failed, waiting-children \(or waiting, for wait\)/);
    expect((await refusal(queue.getJobs('wait', 0.5))).field).toBe('start');
    const [job] = await queue.getJobs('wait');
    expect((await refusal(job.retry('wait' as never))).field).toBe('from');
  });
});

describe('getJob', () => {
  it('answers undefined for an id that names another key of the queue, and finds automatic ids', async () => {
    queue = new Queue(uniqueQueueName('st'), { connection: testConnection() });
    const job = await queue.add('a', {});
    await job.log('a line'); // `<id>:logs` exists now
    await queue.pause(); // `meta` exists now
    for (const id of ['wait', 'paused', 'meta', 'events', 'id', `${job.id}:logs`, `${job.id}:lock`, '', 'x'.repeat(401)]) {
      expect(await queue.getJob(id)).toBeUndefined();
    }
    expect(await queue.getJob(undefined as never)).toBeUndefined();
    expect(/^\d+$/.test(job.id)).toBe(true);
    expect((await queue.getJob(job.id))?.name).toBe('a');
    expect(await queue.getJob(String(Number(job.id) + 1))).toBeUndefined();
  });
});
