import { afterEach, expect } from '@jest/globals';
import { Queue, Worker, type ConnectionInput, type Job, type WorkerConstructorOptions } from '../../lib/index.js';
import type { ProcessorFunction } from '../../lib/runtime/queue/processor.js';
import { testConnection, uniqueQueueName } from './redis.js';

/**
 * A queue and the workers of one test, closed together at the end (force-closed, so a test that
 * failed half-way never hangs the suite).
 */
export class Harness {
  readonly name = uniqueQueueName('w');
  readonly queue: Queue;
  private readonly workers: Worker[] = [];

  /** `connection`: the Redis to use; by default the test run's (a Cluster in the cluster run). */
  constructor(readonly connection: ConnectionInput = testConnection()) {
    this.queue = new Queue(this.name, { connection });
  }

  /** A worker on the harness's Redis; errors are collected instead of printed. */
  worker<D = unknown, R = unknown>(processor: ProcessorFunction<D, R>, opts: WorkerConstructorOptions = {}): Worker<D, R> {
    const worker = new Worker<D, R>(this.name, processor, { connection: this.connection, ...opts });
    worker.on('error', (error) => this.errors.push(error));
    this.workers.push(worker as Worker);
    return worker;
  }

  readonly errors: Error[] = [];

  async close(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.close(true)));
    await this.queue.close();
  }
}

/**
 * One Harness per test: start() makes the test's, and after the test it is closed and its workers
 * are expected to have reported no error. Made at a test file's top (it registers the afterEach).
 */
export class HarnessPerTest {
  private current?: Harness;

  constructor() {
    afterEach(async () => {
      const used = this.current;
      this.current = undefined;
      if (!used) return; // a test that made no harness
      await used.close();
      expect(used.errors).toEqual([]);
    });
  }

  start(connection?: ConnectionInput): Harness {
    this.current = new Harness(connection);
    return this.current;
  }
}

/** Resolves with the first `count` jobs a worker reports for `event`, in order. */
export function collect(worker: Worker, event: 'completed' | 'failed', count: number): Promise<Job[]> {
  return new Promise((resolve) => {
    const seen: Job[] = [];
    worker.on(event, (job: Job) => {
      seen.push(job);
      if (seen.length === count) resolve(seen);
    });
  });
}
