import { afterAll, describe, expect, it } from '@jest/globals';
import { Queue, Worker } from '../lib/index.js';
import { newClient, queueKeys, testConnection, uniqueQueueName } from './support/redis.js';

describe('smoke', () => {
  const client = newClient();
  afterAll(() => client.quit());

  it('processes a job end to end and leaves no lock behind', async () => {
    const name = uniqueQueueName();
    const queue = new Queue(name, { connection: testConnection() });
    const job = await queue.add('hello', { n: 1 });
    const worker = new Worker(name, async (j) => ({ echoed: j.data }), { connection: testConnection() });
    const done = new Promise<unknown>((resolve) => {
      worker.on('completed', (_job, result) => resolve(result));
    });
    expect(await done).toEqual({ echoed: { n: 1 } });
    const stored = await queue.getJob(job.id);
    expect(stored?.returnvalue).toEqual({ echoed: { n: 1 } });
    expect(await stored?.getState()).toBe('completed');
    expect(stored?.attemptsStarted).toBe(1);
    expect((await queueKeys(client, name)).filter((k) => k.endsWith(':lock'))).toEqual([]);
    await worker.close();
    await queue.close();
  });
});
