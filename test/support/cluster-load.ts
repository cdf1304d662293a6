// A producer and workers under load on a Cluster, with a ledger of what happened to every job: the
// failover and migration tests run a fault in the middle of it and judge the ledger after.
import { Cluster, type ClusterOptions } from 'ioredis';
import { Queue, Worker, type Job } from '../../lib/index.js';

/**
 * The Cluster options docs/cluster-failures.md recommends: a command that meets TRYAGAIN (a slot
 * being migrated) or CLUSTERDOWN (a failover) waits it out for up to maxRedirections × 100 ms
 * (a minute) instead of failing after 16 tries (1.6 s, ioredis's default).
 */
export const RECOMMENDED: ClusterOptions = {
  maxRedirections: 600,
  retryDelayOnTryAgain: 100,
  retryDelayOnMoved: 0,
  retryDelayOnClusterDown: 100,
  redisOptions: { maxRetriesPerRequest: null },
};

export interface Ledger {
  added: Set<string>;
  /** When each add was acknowledged (ms). */
  addedAt: Map<string, number>;
  /** The producer's counters (data.i) each job id was given: two mean an id handed out twice. */
  addedAs: Map<string, number[]>;
  /** The producer's counters that completed, each with how many times. */
  completedData: Map<number, number>;
  /** When the add of each producer counter was acknowledged (ms); absent when it was refused. */
  ackedAt: Map<number, number>;
  /** The job id of each producer counter's completions. */
  completedAs: Map<number, string>;
  /** When each producer counter's completions were reported (ms). */
  completedAt: Map<number, number[]>;
  /** Completions per job id, from the workers' 'completed' events. */
  completions: Map<string, number>;
  /** attemptsStarted of each completion, per job id. */
  attempts: Map<string, number[]>;
  stalled: Set<string>;
  lockLost: Set<string>;
  failed: Map<string, string>;
  errors: string[];
  addErrors: string[];
  unhandled: string[];
}

export interface Load {
  ledger: Ledger;
  queue: Queue;
  workers: Worker[];
  /** Resolves once the producer has added all its jobs (or failed: see ledger.addErrors). */
  produced: Promise<void>;
  /** Waits until every added job completed (or the time runs out); true when they all did. */
  drained(timeoutMs: number): Promise<boolean>;
  /** Jobs added and never completed. */
  missing(): string[];
  /** Jobs completed more than once with no stalled or lockLost event to explain it. */
  untracedDoubles(): string[];
  close(): Promise<void>;
}

export interface LoadOptions {
  nodes: Array<{ host: string; port: number }>;
  queueName: string;
  jobs: number;
  /** ms between two adds (the producer keeps adding during the fault). */
  addEveryMs: number;
  workers?: number;
  concurrency?: number;
  handlerMs?: number;
  lockDuration?: number;
  stalledInterval?: number;
  clusterOptions?: ClusterOptions;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function startLoad(opts: LoadOptions): Load {
  const clusters: Cluster[] = [];
  const connection = () => {
    const cluster = new Cluster(opts.nodes, opts.clusterOptions ?? RECOMMENDED);
    cluster.on('error', () => undefined);
    clusters.push(cluster);
    return cluster;
  };
  const ledger: Ledger = {
    added: new Set(), addedAt: new Map(), addedAs: new Map(), completedData: new Map(), ackedAt: new Map(), completedAs: new Map(), completedAt: new Map(), completions: new Map(), attempts: new Map(), stalled: new Set(), lockLost: new Set(),
    failed: new Map(), errors: [], addErrors: [], unhandled: [],
  };
  const onUnhandled = (reason: unknown) => ledger.unhandled.push(String((reason as Error)?.message ?? reason));
  process.on('unhandledRejection', onUnhandled);

  const queue = new Queue(opts.queueName, { connection: connection() });
  const workers = Array.from({ length: opts.workers ?? 2 }, () => {
    const worker = new Worker(opts.queueName, async (job: Job) => {
      await sleep(opts.handlerMs ?? 5);
      return job.id;
    }, {
      connection: connection(), concurrency: opts.concurrency ?? 8,
      lockDuration: opts.lockDuration ?? 5000, stalledInterval: opts.stalledInterval ?? 2000,
    });
    worker.on('completed', (job: Job) => {
      const id = String(job.id);
      ledger.completions.set(id, (ledger.completions.get(id) ?? 0) + 1);
      ledger.attempts.set(id, [...(ledger.attempts.get(id) ?? []), job.attemptsStarted]);
      const i = (job.data as { i?: number }).i;
      if (typeof i === 'number') {
        ledger.completedData.set(i, (ledger.completedData.get(i) ?? 0) + 1);
        ledger.completedAs.set(i, id);
        ledger.completedAt.set(i, [...(ledger.completedAt.get(i) ?? []), Date.now()]);
      }
    });
    worker.on('failed', (job: Job | undefined, error: Error) => { if (job) ledger.failed.set(String(job.id), error.message); });
    worker.on('stalled', (jobId: string) => ledger.stalled.add(String(jobId)));
    worker.on('lockLost', (job: Job) => ledger.lockLost.add(String(job.id)));
    worker.on('error', (error: Error) => ledger.errors.push(error.message));
    return worker;
  });

  const produced = (async () => {
    for (let i = 0; i < opts.jobs; i += 1) {
      try {
        const job = await queue.add('load', { i });
        ledger.added.add(String(job.id));
        ledger.addedAt.set(String(job.id), Date.now());
        ledger.ackedAt.set(i, Date.now());
        ledger.addedAs.set(String(job.id), [...(ledger.addedAs.get(String(job.id)) ?? []), i]);
      } catch (error) {
        ledger.addErrors.push((error as Error).message);
      }
      if (opts.addEveryMs > 0) await sleep(opts.addEveryMs);
    }
  })();

  const missing = () => [...ledger.added].filter((id) => !ledger.completions.has(id));
  return {
    ledger, queue, workers, produced, missing,
    async drained(timeoutMs) {
      const until = Date.now() + timeoutMs;
      await produced;
      while (Date.now() < until && missing().length > 0) await sleep(100);
      return missing().length === 0;
    },
    untracedDoubles: () => [...ledger.completions].filter(([id, n]) => n > 1 && !ledger.stalled.has(id) && !ledger.lockLost.has(id)).map(([id]) => id),
    async close() {
      await Promise.all(workers.map((w) => w.close(true).catch(() => undefined)));
      await queue.close().catch(() => undefined);
      for (const cluster of clusters) cluster.disconnect();
      // Late rejections of the closing connections would still count: give them a tick, then stop listening.
      await sleep(50);
      process.off('unhandledRejection', onUnhandled);
    },
  };
}

/** A short summary of the ledger for the test's log and the docs' figures. */
export function summary(load: Load, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const { ledger } = load;
  const doubles = [...ledger.completions].filter(([, n]) => n > 1);
  return {
    ...extra,
    added: ledger.added.size, completed: ledger.completions.size, missing: load.missing().length,
    doubles: doubles.length, untracedDoubles: load.untracedDoubles().length,
    stalled: ledger.stalled.size, lockLost: ledger.lockLost.size, failed: ledger.failed.size,
    addErrors: ledger.addErrors.length, errors: ledger.errors.length,
    errorKinds: [...new Set([...ledger.errors, ...ledger.addErrors].map((m) => m.slice(0, 80)))].slice(0, 6),
    unhandled: ledger.unhandled.length,
  };
}
