import type { Pickup } from '../protocol/scripts.js';
import type { FetchResult, JobSource } from './job-source.js';
import { Sleeper } from './sleeper.js';
import type { WorkerLane } from './worker-lane.js';

/**
 * A job's finish hands over the next job of its own partition (fetch-next) at most this many times
 * in a row while another partition may have work that this worker runs nothing of; then the slot
 * goes back to the fetch loop, which looks at such partitions first.
 */
export const FAIR_CHAIN = 8;

const NOTHING: Pickup = { nextDelayedAt: 0, rateLimitedFor: 0 };

/**
 * The fetch side of a partitioned queue's worker. It keeps, for each partition, when to look
 * there next: now (a wake-up came, or the last look took a job), when its next delayed job is due
 * or its rate-limit window ends, or never until a wake-up. A fetch looks at the partitions due,
 * those this worker runs no job of first, each group in turn from the one after the last that gave
 * a job (so none is starved while others have work), and answers with the first job found; nothing found means every partition was looked at
 * and none had a job ready. Every drainDelay it looks at all of them, whatever it was told: a
 * wake-up may have been lost.
 */
export class PartitionFetcher implements JobSource {
  /** Per partition: look at or after this time (0: now; Infinity: on a wake-up). */
  private readonly lookAt: number[];
  private cursor = 0;
  private lastFullLook = 0;
  private interrupted = false;
  private readonly sleeper = new Sleeper();

  constructor(
    private readonly lanes: WorkerLane[],
    private readonly drainDelayMs: number,
    /** At most this many jobs of one partition run in this worker at once (partitionConcurrency). */
    private readonly perPartition = Infinity,
  ) {
    this.lookAt = lanes.map(() => 0);
  }

  /** A wake-up for one partition: look there at the next fetch. */
  wake(partition: number): void {
    this.lookAt[partition] = 0;
    this.sleeper.wake();
  }

  /** Wake-ups may have been missed (the listener reconnected): look everywhere. */
  wakeAll(): void {
    this.lookAt.fill(0);
    this.sleeper.wake();
  }

  async fetch(token: string): Promise<FetchResult> {
    const count = this.lanes.length;
    if (Date.now() - this.lastFullLook >= this.drainDelayMs) {
      this.lastFullLook = Date.now();
      this.lookAt.fill(0);
    }
    // Partitions this worker runs nothing of go first: they are the ones a fetch can starve.
    for (let step = 0; step < 2 * count; step++) {
      const index = (this.cursor + step) % count;
      const unserved = this.lanes[index].running === 0;
      if (step < count ? !unserved : unserved) continue;
      if (this.lookAt[index] > Date.now() || this.full(index)) continue;
      // Infinity while the call runs: a wake-up that lands meanwhile sets it back to 0 and is kept.
      this.lookAt[index] = Infinity;
      const lane = this.lanes[index];
      let found;
      try {
        found = await lane.fetcher.fetch(token);
      } catch (error) {
        this.lookAt[index] = 0;
        throw error;
      }
      if (found.pickup.job || found.sentTwice.length > 0) {
        this.lookAt[index] = 0; // more may wait there
        this.cursor = (index + 1) % count;
        return { lane, ...found };
      }
      if (this.lookAt[index] === Infinity) this.lookAt[index] = nextLook(found.pickup);
    }
    return { lane: this.lanes[this.cursor], pickup: NOTHING, sentTwice: [] };
  }

  async waitForWork(): Promise<void> {
    if (this.interrupted) return;
    const now = Date.now();
    let until = this.lastFullLook + this.drainDelayMs;
    // A partition at its partitionConcurrency is looked at again when one of its jobs ends (freed()).
    this.lookAt.forEach((at, index) => {
      if (at < until && !this.full(index)) until = at;
    });
    if (until <= now) return;
    await this.sleeper.sleep(until - now);
  }

  /**
   * A finish may take its partition's next job (and its finishes stay batched with the other
   * slots' of that partition) unless it has done so FAIR_CHAIN times and another partition may
   * have work that this worker runs nothing of: only such a partition can starve, since any
   * partition one of its slots serves gets that slot's next jobs.
   */
  mayChain(lane: WorkerLane, chained: number): boolean {
    if (chained < FAIR_CHAIN) return true;
    const now = Date.now();
    return this.lanes.every((other, index) => other === lane || other.running > 0 || this.lookAt[index] > now || this.full(index));
  }

  /**
   * A job of `lane` ended (its slot's chain of jobs ended: nothing was handed over in its place).
   * Under a partitionConcurrency its partition has room again, for this worker and any other: the
   * others hear it on the wake channel.
   */
  freed(lane: WorkerLane): void {
    if (!Number.isFinite(this.perPartition)) return;
    lane.wake();
    this.wake(lane.index);
  }

  private full(index: number): boolean {
    return this.lanes[index].running >= this.perPartition;
  }

  stopWaiting(): void {
    this.sleeper.wake();
  }

  interrupt(): void {
    this.interrupted = true;
    this.sleeper.wake();
  }
}

/** When an empty partition is worth a look again: its next delayed job, the end of its rate-limit window, or a wake-up. */
function nextLook(pickup: Pickup): number {
  // Full (partitionConcurrency): a job of the partition ending, here or in another worker, wakes it.
  if (pickup.atBound) return Infinity;
  if (pickup.rateLimitedFor > 0) return Date.now() + pickup.rateLimitedFor;
  return pickup.nextDelayedAt > 0 ? pickup.nextDelayedAt : Infinity;
}
