import type { Pickup } from '../../protocol/script-shapes.js';
import type { FetchResult, JobSource } from './job-source.js';
import { Sleeper } from '../core/sleeper.js';
import type { WorkerLane } from './worker-lane.js';

/**
 * How many jobs a worker takes from its current partition, counting the ones finishes hand over,
 * before it moves on to the next partition with work: at least this many, and 20 per slot of its
 * concurrency, so a move (its slots refill one pickup at a time) is rare beside the jobs it runs.
 */
export const MIN_TURN = 64;
const TURN_PER_SLOT = 20;

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
  /** The partition whose turn it is: the worker's slots take their jobs there. */
  private current = -1;
  /** Jobs taken in the current turn. */
  private taken = 0;
  private readonly turn: number;
  private cursor: number;
  private lastFullLook = 0;
  private interrupted = false;
  private readonly sleeper = new Sleeper();

  constructor(
    private readonly lanes: WorkerLane[],
    private readonly drainDelayMs: number,
    /** At most this many jobs of one partition run in this worker at once (partitionConcurrency). */
    private readonly perPartition = Infinity,
    concurrency = 1,
  ) {
    this.lookAt = lanes.map(() => 0);
    this.turn = Math.max(MIN_TURN, TURN_PER_SLOT * concurrency);
    // Workers start their turns at different partitions, so that several spread over the queue.
    this.cursor = Math.floor(Math.random() * lanes.length);
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
    // The current partition first; then the others in turn from the cursor.
    for (let step = -1; step < count; step++) {
      const index = step < 0 ? this.current : (this.cursor + step) % count;
      if (index < 0 || (step >= 0 && index === this.current)) continue;
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
        if (index !== this.current) this.beginTurn(index);
        this.taken++;
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
   * A finish may take its partition's next job while it is that partition's turn, and the turn
   * lasts `turn` jobs, or longer while no other partition has work. Then the turn passes to the next
   * partition with work and the slots move there as their jobs end: the worker's finishes stay
   * batched in one partition (one call per turn of the event loop, as on a plain queue), and no
   * partition waits for more than a turn. A slot still in another partition (the turn moved)
   * goes back to the fetch loop, unless the current partition has nothing ready.
   */
  mayChain(lane: WorkerLane): boolean {
    const now = Date.now();
    // A slot left in another partition stays while no partition but its own may have work for it.
    if (lane.index !== this.current) return this.lookAt.every((at, index) => index === lane.index || at > now || this.full(index));
    if (this.taken < this.turn) {
      this.taken++;
      return true;
    }
    const next = this.nextWithWork(now);
    if (next < 0) {
      this.taken++;
      return true;
    }
    this.beginTurn(next);
    return false;
  }

  /** The first partition after the current one, in turn, that may have work; -1 when none. */
  private nextWithWork(now: number): number {
    const count = this.lanes.length;
    for (let step = 1; step < count; step++) {
      const index = (this.current + step) % count;
      if (this.lookAt[index] <= now && !this.full(index)) return index;
    }
    return -1;
  }

  private beginTurn(index: number): void {
    this.current = index;
    this.taken = 0;
    this.cursor = (index + 1) % this.lanes.length;
  }

  /**
   * A job of `lane` ended (its slot's chain of jobs ended: nothing was handed over in its place).
   * Under a partitionConcurrency its partition has room again, for this worker and any other: the
   * others hear it on the wake channel.
   */
  freed(lane: WorkerLane): void {
    if (Number.isFinite(this.perPartition)) this.announce(lane);
  }

  /** `lane`'s partition has work or room: every worker of the queue hears it, this one at once. */
  announce(lane: WorkerLane): void {
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
