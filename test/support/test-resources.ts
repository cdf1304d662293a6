import { afterEach, expect } from '@jest/globals';
import type { Cluster, Redis } from 'ioredis';
import { FlowProducer, Queue, Worker, type Job, type ProcessorFunction, type WorkerConstructorOptions } from '../../lib/index.js';
import { eventually, newClient, testConnection } from './redis.js';

/**
 * What a test opens (queues, workers, producers, connections), closed after it, the last opened
 * first. Importing this module registers the afterEach in the importing test file.
 */
export const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (closers.length > 0) await closers.pop()!();
});

export function producer(): FlowProducer {
  const flow = new FlowProducer({ connection: testConnection() });
  closers.push(() => flow.close());
  return flow;
}

export function queue(name: string): Queue {
  const q = new Queue(name, { connection: testConnection() });
  closers.push(() => q.close());
  return q;
}

/** A worker on the test run's Redis; closed with close(true), and expected to have reported no error. */
export function worker(name: string, processor: ProcessorFunction, opts: WorkerConstructorOptions = {}): Worker {
  const w = new Worker(name, processor, { connection: testConnection(), ...opts });
  const errors: Error[] = [];
  w.on('error', (error) => errors.push(error));
  closers.push(async () => {
    await w.close(true);
    expect(errors).toEqual([]);
  });
  return w;
}

/** A connection of its own, dropped after the test. */
export function redis(): Redis | Cluster {
  const client = newClient();
  closers.push(async () => client.disconnect());
  return client;
}

/** The job once it has finished (completed or failed), read back from its queue. */
export async function finished(q: Queue, jobId: string, timeoutMs = 10_000): Promise<Job> {
  return eventually<Job | undefined>(async () => {
    const job = await q.getJob(jobId);
    return job?.finishedOn !== undefined ? job : undefined;
  }, timeoutMs, `job ${jobId} of ${q.name} finished`) as Promise<Job>;
}
