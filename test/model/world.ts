import type { Cluster, Redis } from 'ioredis';
import { EchoMQError, FlowProducer, Queue, Worker, type Job } from '../../lib/index.js';
import { newClient, sleep, testConnection, uniqueQueueName } from '../support/redis.js';
import { snapshotQueue, type QueueSnapshot } from './snapshot.js';

/** What a job does when it runs: sleeps `ms`, then fails while its attempts made are below `fail`. */
export interface Behaviour {
  ms: number;
  fail: number;
}

/** Short locks and sweeps, so that a worker given up (close(true)) is recovered from within a settle. */
export const WORKER_TIMING = { lockDuration: 1000, stalledInterval: 500, maxStalledCount: 1 };

/**
 * The system under test of one run of the model checker: two queues on the test Redis (`parents`:
 * plain jobs, scheduler jobs and the parents of flows; `children`: the children), a FlowProducer,
 * and the workers the run starts and stops. Every job id it added is remembered, so that commands
 * can name one (cancel, remove, retry...).
 */
export class World {
  readonly client: Redis | Cluster = newClient();
  readonly parents: Queue;
  readonly children: Queue;
  readonly producer: FlowProducer;
  readonly workers: Array<{ queue: Queue; worker: Worker }> = [];
  /** Every job id added, with its queue (ids repeat: a custom id, a deduplicated add). */
  readonly added: Array<{ queue: Queue; id: string }> = [];
  readonly errors: Error[] = [];
  /** Command lines run so far, for the report of a failure. */
  readonly log: string[] = [];

  constructor() {
    const connection = testConnection();
    this.parents = new Queue(uniqueQueueName('mp'), { connection });
    this.children = new Queue(uniqueQueueName('mc'), { connection });
    this.producer = new FlowProducer({ connection });
  }

  get queues(): Queue[] {
    return [this.parents, this.children];
  }

  /** A job `pick` names among those added (undefined when none was). */
  pickJob(pick: number): { queue: Queue; id: string } | undefined {
    return this.added.length === 0 ? undefined : this.added[pick % this.added.length];
  }

  startWorker(queue: Queue, concurrency: number): void {
    const worker = new Worker(queue.name, runBehaviour, { connection: testConnection(), concurrency, ...WORKER_TIMING });
    worker.on('error', (error) => {
      // A connection dropped by close(true) mid-call is what a kill looks like; anything else is reported.
      if (!/Connection is closed|closed without waiting|lock/i.test(error.message)) this.errors.push(error);
    });
    this.workers.push({ queue, worker });
  }

  /** Each queue served by at least one worker (the eventual invariants need someone to sweep). */
  ensureWorkers(): void {
    for (const queue of this.queues) if (!this.workers.some((w) => w.queue === queue)) this.startWorker(queue, 2);
  }

  async stopWorker(pick: number, force: boolean): Promise<void> {
    if (this.workers.length === 0) return;
    const [{ worker }] = this.workers.splice(pick % this.workers.length, 1);
    await worker.close(force);
  }

  async snapshots(): Promise<QueueSnapshot[]> {
    return Promise.all(this.queues.map((queue) => snapshotQueue(this.client, queue.keys)));
  }

  /** Runs a command's action; a refusal the API documents (an EchoMQError: not in that state, gone) is an answer, not a failure. */
  async tolerate(action: () => Promise<unknown>): Promise<void> {
    try {
      await action();
    } catch (error) {
      if (!(error instanceof EchoMQError)) throw error;
    }
  }

  /** Closes every worker, waiting for the jobs they run. */
  async stopWorkers(): Promise<void> {
    await Promise.all(this.workers.splice(0).map(({ worker }) => worker.close()));
  }

  async close(): Promise<void> {
    await Promise.all(this.workers.splice(0).map(({ worker }) => worker.close(true)));
    await this.producer.close();
    await Promise.all(this.queues.map((queue) => queue.close()));
    this.client.disconnect();
  }
}

async function runBehaviour(job: Job): Promise<string> {
  const { ms = 0, fail = 0 } = (job.data ?? {}) as Partial<Behaviour>;
  if (ms > 0) await sleep(ms);
  if (job.attemptsMade < fail) throw new Error(`planned failure ${job.attemptsMade + 1} of ${fail}`);
  return 'ok';
}
