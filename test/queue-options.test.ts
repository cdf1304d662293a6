import { describe, expect, it } from '@jest/globals';
import { EchoMQOptionError, Queue } from '../lib/index.js';
import { newClient, queueKeys, testConnection, uniqueQueueName } from './support/redis.js';

describe('QueueOptions', () => {
  it('refuses defaultJobOptions.jobId: every add would be the one job', async () => {
    const name = uniqueQueueName('opts');
    let error: unknown;
    try {
      await new Queue(name, { connection: testConnection(), defaultJobOptions: { jobId: 'same' } }).close();
    } catch (thrown) {
      error = thrown;
    }
    expect(error).toBeInstanceOf(EchoMQOptionError);
    expect((error as EchoMQOptionError).field).toBe('defaultJobOptions.jobId');
    const client = newClient();
    expect(await queueKeys(client, name)).toEqual([]);
    client.disconnect();
  });
});
