import { EchoMQError } from '../../protocol/errors.js';
import type { Scripts } from '../../protocol/scripts.js';
import type { Finish, Pickup, RateLimit } from '../../protocol/script-shapes.js';
import { CallBatcher } from '../core/call-batcher.js';

/** The limits a finish's fetch-next keeps, read at each call (WorkerLimits). */
export interface FinishLimits {
  readonly rateLimit?: RateLimit;
  /** A plain queue's queue-wide concurrency (Infinity: none). */
  readonly globalConcurrency: number;
}

/**
 * How a worker sends its finishes: one alone as moveToFinished-14, several that are ready
 * together as one finishJobs-13 call (its batch form; each job keeps its own lock check). A
 * retry (a failed attempt with attempts left) is a finish too, alone or not, sent by finishJobs-13:
 * it joins the turn's batch and takes its next job like the others.
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
 *
 * Under a queue-wide concurrency every finish, one or many, goes as finishJobsBounded-13: the
 * fetch-next of moveToFinished-14 (fixed) never looks at active, so it would keep active at a bound
 * that was since lowered. The same one call per finish; without that bound nothing changes.
 */
export class FinishBatcher {
  private readonly batcher: CallBatcher<Finish, Pickup>;
  /**
   * The finishes of jobs of flows (children, parents with flow keys): finishFlowJobs-15, one call
   * however many, with the same fetch-next and the same rule of when to send. A turn's plain and
   * flow finishes go as two calls; a worker that runs no flow never sends one here.
   */
  private readonly flowBatcher: CallBatcher<Finish, Pickup>;

  /** `limits`: the rate limit and bound the fetch-next pickups obey. */
  constructor(scripts: Scripts, lockDuration: number, limits: FinishLimits, concurrency: number, runningJobs: () => number) {
    this.batcher = new CallBatcher<Finish, Pickup>(
      (batch) => {
        const { rateLimit, globalConcurrency } = limits;
        if (Number.isFinite(globalConcurrency)) return scripts.finishJobs(batch, Date.now(), lockDuration, rateLimit, globalConcurrency);
        // moveToFinished-14 (fixed) takes no retry: a lone one goes as a batch of one.
        return batch.length === 1 && batch[0].outcome !== 'retried'
          ? finishOne(scripts, batch[0], rateLimit)
          : scripts.finishJobs(batch, Date.now(), lockDuration, rateLimit);
      },
      finishBatchSize(concurrency),
      (pending, inFlight) => pending + inFlight >= runningJobs(),
    );
    this.flowBatcher = new CallBatcher<Finish, Pickup>(
      (batch) => scripts.finishFlowJobs(batch, Date.now(), lockDuration, limits.rateLimit, limits.globalConcurrency),
      finishBatchSize(concurrency),
      (pending, inFlight) => pending + inFlight >= runningJobs(),
    );
  }

  /** Sends the finishes waiting for the end of the turn now (the worker is closing). */
  flush(): void {
    this.batcher.flush();
    this.flowBatcher.flush();
  }

  /** Sends a finish (with or without fetch-next); rejects with the EchoMQError that refused it. */
  finish(finish: Finish): Promise<Pickup> {
    return this.batcher.submit(finish);
  }

  /** Sends the finish of a job of a flow (finishFlowJobs-15): its notice, if it has a parent, is in Redis once it landed. */
  finishFlow(finish: Finish): Promise<Pickup> {
    return this.flowBatcher.submit(finish);
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
