import type { RedisClient } from '../../protocol/script.js';
import type { Queue } from '../../runtime/queue/queue.js';

/** What the health check tells of one queue. */
export interface QueueHealth {
  /** Jobs per state (BullMQ's names). */
  counts: Record<string, number>;
  /** Jobs ready to run and not started: wait + paused + prioritized (what maxWaiting is held against). */
  waiting: number;
  paused: boolean;
  /** Live workers of the queue, in every process (queue.getWorkers()). */
  workers: number;
  /** Jobs failed finally in the last 60 s (only when maxFailedPerMinute is given). */
  failedLastMinute?: number;
}

const STATES = ['waiting', 'paused', 'prioritized', 'active', 'delayed', 'completed', 'failed', 'waiting-children'] as const;

/**
 * Reads one queue on its own connection: its counts (one pipeline per partition), whether it is
 * paused, its live workers and, when asked, its failures of the last minute.
 */
export async function readQueueHealth(queue: Queue, countFailures: boolean): Promise<QueueHealth> {
  const [counts, paused, workers, failedLastMinute] = await Promise.all([
    queue.getJobCounts(...STATES),
    queue.isPaused(),
    queue.getWorkers(),
    countFailures ? failedSince(queue, Date.now() - 60_000) : Promise.resolve(undefined),
  ]);
  const full = counts as Record<string, number>;
  return {
    counts: full,
    waiting: full.waiting + full.paused + full.prioritized,
    paused,
    workers: workers.length,
    ...(failedLastMinute === undefined ? {} : { failedLastMinute }),
  };
}

/**
 * Jobs in `failed` whose finish (the set's score: finishedOn) is at or after `since`. Counted by
 * score rather than from queue.getMetrics: those counts exist only when every worker has
 * `metrics`, come in whole minutes and lag the workers by up to 5 s, while the set answers for any
 * queue to the ms. Jobs removed at their failure (removeOnFail) are not seen, nor are those
 * cleaned since.
 */
async function failedSince(queue: Queue, since: number): Promise<number> {
  const client: RedisClient = queue.client;
  const counts = await Promise.all(queue.partitionKeys.map((keys) => client.zcount(keys.failed, since, '+inf')));
  return counts.reduce((sum, n) => sum + n, 0);
}
