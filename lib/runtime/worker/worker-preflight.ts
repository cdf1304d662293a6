import type { RedisClient } from '../../protocol/script.js';
import { partitionCountError } from '../queue/partition-count.js';
import { PARTITIONS_NEED, redisVersionError } from '../core/redis-health.js';
import type { FetchLoop } from './fetch-loop.js';
import type { PartitionWaker } from './partition-waker.js';
import type { WorkerLane } from './worker-lane.js';
import type { WorkerPresence } from './worker-presence.js';

/** What a worker's preflight reads. */
export interface PreflightParts {
  readonly queueName: string;
  readonly client: RedisClient;
  readonly lanes: readonly WorkerLane[];
  readonly waker?: PartitionWaker;
  readonly presence: WorkerPresence;
  /** Its isRunning() and backOff(): a preflight tries again until it lands or the worker closes. */
  readonly loop: FetchLoop;
  /** Reports a refusal and closes the worker. */
  refuse(error: Error): void;
  reportError(error: Error): void;
}

/**
 * What must hold before the first pickup: a Redis recent enough on every master; for a
 * partitioned queue, the partition count Redis records, and the wake channels subscribed. A
 * refusal closes the worker (false); a failed subscription (no subscriber for a slot during a
 * failover) is reported and tried again with the fetch loop's backoff.
 */
export async function preflight(parts: PreflightParts): Promise<boolean> {
  const { client, waker, lanes } = parts;
  const partitioned = waker !== undefined;
  const refusal = (await redisVersionError(client, partitioned ? PARTITIONS_NEED : undefined))
    ?? (partitioned ? await partitionCountError(client, lanes[0].keys, parts.queueName, lanes.length, 'this worker').catch(() => undefined) : undefined);
  if (refusal) {
    parts.refuse(refusal);
    return false;
  }
  if (!(await startPresence(parts))) return false;
  return retried(parts, async () => waker?.start());
}

/**
 * The worker's registry entry written and the queue's limits read (a worker must not take jobs
 * blind to a queue-wide bound), before the first pickup; from then on every heartbeat tick
 * carries both.
 */
function startPresence(parts: PreflightParts): Promise<boolean> {
  return retried(parts, async () => {
    await parts.presence.start();
    parts.lanes[0].locks.carry(parts.presence);
  });
}

/** Runs `step` until it lands (true) or the worker closes (false), reporting each failure and backing off. */
async function retried(parts: PreflightParts, step: () => Promise<unknown>): Promise<boolean> {
  const { loop } = parts;
  for (let failures = 0; loop.isRunning(); failures++) {
    try {
      await step();
      return true;
    } catch (error) {
      if (!loop.isRunning()) return false;
      parts.reportError(error as Error);
      await loop.backOff(failures);
    }
  }
  return false;
}
