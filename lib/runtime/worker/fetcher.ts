import type { Keys } from '../../protocol/keys.js';
import type { RedisClient } from '../../protocol/script.js';
import type { Scripts } from '../../protocol/scripts.js';
import type { Pickup, RateLimit } from '../../protocol/script-shapes.js';
import { dropClient, dropCounter, type DropCounter } from '../core/connection.js';
import { findAllByLockToken, type HandedOverJob } from './handover-recovery.js';
import { Sleeper } from '../core/sleeper.js';

/** The limits a pickup passes, read at each call: they follow the queue's meta (WorkerLimits). */
export interface PickupLimits {
  /** The rate limit (moveToActive-11's ARGV[6] and [7]), if any. */
  readonly rateLimit?: RateLimit;
  /** No pickup while active holds this many jobs (moveToActiveBounded-11); Infinity: no bound. */
  readonly pickupBound: number;
}

/** The worker settings a fetch uses. */
export interface FetchSettings {
  lockDuration: number;
  /** Longest BZPOPMIN block, in seconds. */
  drainDelay: number;
  /** Default: no rate limit, no bound. */
  limits?: PickupLimits;
}

/**
 * How a worker gets its next job: moveToActive-11 on the shared connection, and when nothing is
 * ready, BZPOPMIN on the wake-up marker on a connection of its own. The block lasts until a job
 * is added (the marker) or drainDelay passes; a local timer ends the wait when the next delayed
 * job is due. No busy polling, and delayed jobs fire on time even while the worker is idle.
 *
 * Why a local timer and not a shorter block: Redis times out a blocked command only on its
 * server cron (every 100 ms at the default hz of 10), so a block timed to a delayed job's due
 * time fires it up to 100 ms late. A block outlived by the timer is kept and reused by the next
 * wait rather than sent again behind itself; a marker it pops while nobody waits is put back,
 * so the wake-up still reaches an idle worker.
 *
 * Every wait ends at interrupt(): the rate-limit window too (an hourly limiter would otherwise
 * hold a closing worker for up to an hour).
 *
 * A marker "1" (a delayed job due at its score) wakes one blocked worker; that worker alone would
 * then know the due time, and if it died before it (kill -9) the others would find the job only at
 * their drainDelay, which for a job scheduler means a missed slot. So a worker that pops a due time
 * earlier than any it knew reads the queue, and when the pickup confirms a delayed job due by then
 * (a "1" outlives a job removed or promoted meanwhile, and passing that one on would keep every
 * idle worker busy until its score), passes the marker on with the confirmed due time: each
 * blocked worker learns it in turn, and the round ends at a worker that knew it already, which
 * keeps waiting without a call (its timer fires at that due time or earlier). docs/protocol.md,
 * "The wake-up marker".
 */
export class Fetcher {
  private readonly sleeper = new Sleeper();
  private interrupted = false;
  private block?: Promise<BlockEnd>;
  private waiting = false;
  /** The earliest due time of a delayed job this worker knows (its timer fires then); 0: none. */
  private knownDueAt = 0;
  /** The score of a "1" that was news to this worker, to pass on once the next pickup confirms it; 0: none. */
  private news = 0;
  /** Counts stopWaiting() calls: a wait that went on after a known due time ends at one too. */
  private stops = 0;

  /** How often the shared connection dropped: a fetch that spans a drop may have been sent twice. */
  private readonly connection: DropCounter;

  constructor(
    private readonly scripts: Scripts,
    /** The worker's shared connection: a marker popped while nobody waits is put back on it. */
    private readonly client: RedisClient,
    /** Undefined for a lane of a partitioned queue: those wait on a PartitionWaker, never on the marker. */
    private readonly blockingClient: RedisClient | undefined,
    private readonly keys: Keys,
    private readonly settings: FetchSettings,
  ) {
    this.connection = dropCounter(client);
  }

  /**
   * Takes the next ready job into active under `token` (moveToActive-11). `sentTwice` holds the
   * other jobs locked under the same token when the call may have run twice: the shared connection
   * dropped while it was in flight, and ioredis sends an unanswered command again after it
   * reconnects. Without the check, the job the first send took would wait out its lock and a
   * sweep, and gain a stall. Nothing is read while the connection holds.
   */
  async fetch(token: string): Promise<{ pickup: Pickup; sentTwice: HandedOverJob[] }> {
    const drops = this.connection.drops;
    const { limits } = this.settings;
    const news = this.news;
    this.news = 0;
    const pickup = await this.scripts.moveToActive(token, this.settings.lockDuration, Date.now(), limits?.rateLimit, limits?.pickupBound);
    if (news > 0 && pickup.nextDelayedAt > 0 && pickup.nextDelayedAt <= news) this.putBack(DUE_MARKER, String(pickup.nextDelayedAt));
    if (drops === this.connection.drops) return { pickup, sentTwice: [] };
    const held = await findAllByLockToken(this.client, this.keys, token);
    return { pickup, sentTwice: held.filter((job) => job.id !== pickup.job?.id) };
  }

  /**
   * Waits until there may be work: after a rate-limit window (a sleep, never a poll: no call goes
   * to Redis until it ends, or stopWaiting() or interrupt() ends it), on the marker (a queue full
   * under its concurrency waits here too, for the marker a freed slot sets), when a delayed job is
   * due, or a timeout.
   */
  async waitForWork(pickup: Pickup): Promise<void> {
    if (this.interrupted) return;
    if (pickup.rateLimitedFor > 0) {
      await this.sleeper.sleep(pickup.rateLimitedFor);
      return;
    }
    this.knownDueAt = pickup.nextDelayedAt;
    const stops = this.stops;
    for (;;) {
      let untilDue = Infinity;
      if (this.knownDueAt > 0) {
        untilDue = this.knownDueAt - Date.now();
        if (untilDue <= 0) return;
      }
      const block = (this.block ??= this.startBlock());
      let end: BlockEnd | undefined;
      this.waiting = true;
      try {
        // interrupt() ends the wait itself, not only the block: a BZPOPMIN that ioredis holds to
        // send again after a reconnect is never settled when the connection is dropped meanwhile.
        await this.sleeper.race(untilDue >= this.settings.drainDelay * 1000 ? Infinity : untilDue, block.then((ended) => { end = ended; }));
      } finally {
        this.waiting = false;
      }
      if (this.interrupted || this.stops !== stops) return;
      // The timer ended it: setTimeout's clock is not Date's, and it may fire a millisecond before
      // Date.now() reaches the due time, when the pickup would find the job not due yet. The
      // loop's head returns once it is due (a wait of a millisecond more at most).
      if (end === undefined) continue;
      if (end !== 'known') return;
    }
  }

  /**
   * Ends a wait in progress without closing anything (the worker paused): a marker its block pops
   * later is put back for another worker instead of being swallowed here.
   */
  stopWaiting(): void {
    this.stops++;
    this.sleeper.wake();
  }

  /** Ends a wait in progress, and every later one at once (the worker is closing): drops the blocking connection. */
  interrupt(): void {
    this.interrupted = true;
    this.sleeper.wake();
    if (this.blockingClient) dropClient(this.blockingClient);
  }

  private startBlock(): Promise<BlockEnd> {
    if (!this.blockingClient) throw new Error('a lane of a partitioned queue never blocks on its marker');
    // Redis takes fractional seconds; 1 ms is its finest step.
    const block: Promise<BlockEnd> = this.blockingClient.bzpopmin(this.keys.marker, Math.max(0.001, this.settings.drainDelay).toFixed(3))
      .then((popped) => this.judge(popped as [string, string, string] | null))
      .finally(() => {
        if (this.block === block) this.block = undefined;
      });
    // A block the timer outlived may fail with nobody awaiting it (the connection closes): its
    // waiter, if any, still sees the error; without one it is not an error to report.
    block.catch(() => undefined);
    return block;
  }

  /** What a popped marker means to this worker; puts it back where another worker needs it. */
  private judge(popped: [key: string, member: string, score: string] | null): BlockEnd {
    if (!popped) return 'timeout';
    const [, member, score] = popped;
    if (this.interrupted) return 'wake';
    // Nobody waits here (the timer outlived the block): the wake-up is for another worker.
    if (!this.waiting) return this.putBack(member, score);
    if (member !== DUE_MARKER) return 'wake';
    const dueAt = Number(score);
    if (!(dueAt > Date.now())) return 'wake'; // due now: this worker takes it
    if (this.knownDueAt > 0 && this.knownDueAt <= dueAt) return 'known';
    this.news = dueAt; // passed on by the pickup this wake-up leads to, if it confirms the due time
    return 'wake';
  }

  /**
   * ZADD LT: a marker "1" set meanwhile for an earlier due time stays (the earlier news wins); "0"
   * scores 0 and stays as it is.
   */
  private putBack(member: string, score: string): 'wake' {
    void this.client.zadd(this.keys.marker, 'LT', score, member).catch(() => undefined);
    return 'wake';
  }
}

/** How a block on the marker ended: drainDelay passed, a wake-up to act on, or a due time this worker knew. */
type BlockEnd = 'timeout' | 'wake' | 'known';

/** The marker member of a delayed job's due time (its score); "0" is ready work. */
const DUE_MARKER = '1';
