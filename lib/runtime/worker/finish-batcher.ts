import { EchoMQError } from '../../protocol/errors.js';
import type { Finish, Pickup, RateLimit, Scripts } from '../../protocol/scripts.js';
import { CallBatcher } from '../queue/call-batcher.js';

/**
 * How a worker sends its finishes: one alone as moveToFinished-14, several that are ready
 * together as one finishJobs-13 call (its batch form; each job keeps its own lock check).
 *
 * Why: at concurrency above 1 jobs finish in bursts (one reply hands over several fetch-next
 * jobs, and short handlers end in the same turn of the event loop). One script call per burst
 * instead of one per job saves, per job, a command's encoding and socket write in Node and a
 * script call in Redis; the delayed-job and pause checks run once per call.
 *
 * When: a finish waits at most to the end of the current event-loop turn, and not at all once
 * every job the worker runs is waiting here or in flight (nobody else can join; at concurrency 1
 * that is always so, and each finish goes at once). A batch holds at most `finishBatchSize`
 * finishes, so that at high concurrency several batches are in flight: Node runs the jobs of one
 * reply while Redis runs the next call, and the two work in parallel.
 */
export class FinishBatcher {
  private readonly batcher: CallBatcher<Finish, Pickup>;

  /** `limiter`: the worker's rate limit, which the fetch-next pickups obey. */
  constructor(scripts: Scripts, lockDuration: number, limiter: RateLimit | undefined, concurrency: number, runningJobs: () => number) {
    this.batcher = new CallBatcher<Finish, Pickup>(
      (batch) => (batch.length === 1 ? finishOne(scripts, batch[0], limiter) : scripts.finishJobs(batch, Date.now(), lockDuration, limiter)),
      finishBatchSize(concurrency),
      (pending, inFlight) => pending + inFlight >= runningJobs(),
    );
  }

  /** Sends the finishes waiting for the end of the turn now (the worker is closing). */
  flush(): void {
    this.batcher.flush();
  }

  /** Sends a finish (with or without fetch-next); rejects with the EchoMQError that refused it. */
  finish(finish: Finish): Promise<Pickup> {
    return this.batcher.submit(finish);
  }
}

/** The most finishes one finishJobs-13 call carries: half the concurrency (two batches in flight), at most 100 (one call stays short). */
export function finishBatchSize(concurrency: number): number {
  return Math.min(100, Math.max(1, Math.ceil(concurrency / 2)));
}

async function finishOne(scripts: Scripts, finish: Finish, limiter: RateLimit | undefined): Promise<Array<Pickup | Error>> {
  try {
    return [await scripts.moveToFinished(finish, limiter)];
  } catch (error) {
    if (error instanceof EchoMQError) return [error];
    throw error;
  }
}
