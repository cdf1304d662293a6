import type { Pickup } from '../../protocol/script-shapes.js';
import type { HandedOverJob } from './handover-recovery.js';
import type { WorkerLane } from './worker-lane.js';

/** One fetch: the job taken (if any), the lane it came from, and jobs a resent call locked too. */
export interface FetchResult {
  lane: WorkerLane;
  pickup: Pickup;
  sentTwice: HandedOverJob[];
}

/**
 * Where a worker's fetch loop gets jobs: the one lane of a plain queue (SingleLaneSource), or the
 * lanes of a partitioned queue taken in turn (PartitionFetcher).
 */
export interface JobSource {
  /** Takes the next ready job under `token`; `pickup.job` undefined means none was ready anywhere. */
  fetch(token: string): Promise<FetchResult>;
  /** Waits until there may be work (a wake-up, a due delayed job, the end of a rate-limit window, drainDelay). */
  waitForWork(): Promise<void>;
  /** May a job's finish in `lane` take that lane's next job in the same call (fetch-next)? */
  mayChain(lane: WorkerLane): boolean;
  /** A job of `lane` ended (its slot is free). */
  freed(lane: WorkerLane): void;
  /** Ends a wait in progress (the worker paused); the next wait waits again. */
  stopWaiting(): void;
  /** Ends a wait in progress and every later one (the worker is closing). */
  interrupt(): void;
}

/** A plain queue: its lane's Fetcher blocks on the marker; a finish always may take the next job. */
export class SingleLaneSource implements JobSource {
  private last: Pickup = { nextDelayedAt: 0, rateLimitedFor: 0 };

  constructor(private readonly lane: WorkerLane) {}

  async fetch(token: string): Promise<FetchResult> {
    const { pickup, sentTwice } = await this.lane.fetcher.fetch(token);
    this.last = pickup;
    return { lane: this.lane, pickup, sentTwice };
  }

  waitForWork(): Promise<void> {
    return this.lane.fetcher.waitForWork(this.last);
  }

  mayChain(): boolean {
    return true;
  }

  freed(): void {
    // The worker's own wait for a free slot is woken by the worker.
  }

  stopWaiting(): void {
    this.lane.fetcher.stopWaiting();
  }

  interrupt(): void {
    this.lane.fetcher.interrupt();
  }
}
