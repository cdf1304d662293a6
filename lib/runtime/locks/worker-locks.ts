import { codeMeaning } from '../../protocol/codes.js';
import { runPipelined, type ScriptCall } from '../../protocol/script.js';
import { parseCancelled, parseLockFailures } from '../../protocol/script-replies.js';
import type { JobCancelledEvent, LockReleasedEvent } from './lock-events.js';
import { JobCancelledError } from '../core/job-cancelled-error.js';
import { withinMs } from '../core/within-ms.js';
import type { HeartbeatTimer, SharedHeartbeat } from './heartbeat-timer.js';
import type { LockEmitter, LockHolder, TickPassenger } from './lock-holder.js';
import { LockLostError } from './lock-lost-error.js';
import type { RenewalLease } from './renewal-connections.js';
import { TrackedJob, type JobLock } from './tracked-job.js';

/** Redis's answer to a script that touched a key of a slot in migration the node no longer (or not yet) holds. */
const MIGRATION_SPLIT = /non local key/;

/**
 * One worker's tracked jobs and its one heartbeat timer. The timer runs while the worker holds
 * jobs, and while a TickPassenger rides (a Worker's registry entry and limits: from its start to
 * its close); each tick sends every renewal (extendLocks-1, chunked) in one pipelined round trip
 * on the LockManager's renewal connection (never the worker's shared one, where bulk traffic
 * would hold it back), and only then lets subscribers see anything, so no subscriber can hold a
 * renewal back either.
 */
export class WorkerLocks {
  private readonly jobs = new Map<string, TrackedJob>();
  private readonly heartbeat: HeartbeatTimer;
  private passenger?: TickPassenger;
  private closed = false;
  private unregistered = false;

  constructor(
    readonly holder: LockHolder,
    private readonly chunkSize: number,
    private readonly emit: LockEmitter,
    private readonly renewal: RenewalLease,
    private readonly onClose: () => void,
    /** The worker's one timer; the WorkerLocks of its several partitions share it. */
    readonly sharedHeartbeat: SharedHeartbeat,
  ) {
    // The LockManager validated the holder before it registered it (register() is the way in).
    this.heartbeat = sharedHeartbeat.join((lateBy) => this.tick(lateBy).catch((error: Error) => this.tickFailed(error)));
  }

  /** How many jobs it holds now. */
  get size(): number {
    return this.jobs.size;
  }

  /** The ids of the jobs it holds now. */
  get jobIds(): string[] {
    return [...this.jobs.keys()];
  }

  /** True once the worker closed its locks: nothing is renewed any more. */
  get isClosed(): boolean {
    return this.closed;
  }

  /** True while its heartbeat timer runs (it holds at least one job, or a passenger rides). */
  get timerActive(): boolean {
    return this.heartbeat.active;
  }

  /**
   * Starts renewing a job just picked up. `acquiredAt` is when the pickup that set the lock was
   * sent (the lock is at least that fresh). A job this worker already held under an older token
   * (its lock lapsed, a sweep requeued it, this worker took it again) loses the older ownership.
   */
  track(jobId: string, token: string, attemptsStarted: number, acquiredAt = Date.now()): JobLock {
    const { queue, workerId } = this.holder;
    const previous = this.jobs.get(jobId);
    if (previous) this.lose(previous, -6, 'the job was picked up again by this worker under a new token', Date.now());
    const job = new TrackedJob(this, jobId, token, acquiredAt);
    this.jobs.set(jobId, job);
    if (!this.closed) this.heartbeat.start();
    if (this.emit.observed('acquired')) this.emit.acquired({ type: 'acquired', queue, workerId, at: Date.now(), jobId, attemptsStarted });
    return job;
  }

  /** The ids of the jobs it holds whose pickup was sent at or before `time` (ms). */
  idsAcquiredBy(time: number): string[] {
    const ids: string[] = [];
    for (const job of this.jobs.values()) if (job.acquiredAt <= time) ids.push(job.jobId);
    return ids;
  }

  /** The ownership this worker holds of a job now, if any (a handler's own move looks it up). */
  lockOf(jobId: string): JobLock | undefined {
    return this.jobs.get(jobId);
  }

  /**
   * From now on every tick carries `passenger`'s commands, and the timer runs until close() even
   * while the worker holds no job (a worker's registry entry must stay fresh while it is idle).
   */
  carry(passenger: TickPassenger): void {
    if (this.closed) return;
    this.passenger = passenger;
    this.heartbeat.start();
  }

  /**
   * Cancels a job this worker runs: its signal aborts with a JobCancelledError and its runner fails
   * it without waiting for the handler (not retried). False when the worker does not hold the job,
   * or its run is already being cut short or finished.
   */
  cancel(jobId: string, reason: string | undefined, by: JobCancelledEvent['by']): boolean {
    const job = this.jobs.get(jobId);
    if (!job || !job.interrupt(new JobCancelledError(jobId, reason))) return false;
    const { queue, workerId } = this.holder;
    this.emit.cancelled({ type: 'cancelled', queue, workerId, at: Date.now(), jobId, ...(reason === undefined ? {} : { reason }), by });
    return true;
  }

  /**
   * Asks Redis which of `jobIds` (by default every job it holds) queue.cancelJob marked, and
   * cancels those it still holds, as cancel() does (`by` 'queue'). One cancelledAmong-1 call per
   * renewal chunk, all in one round trip on the renewal connection (it waits behind nothing but
   * renewals), bounded by lockRenewTime like a tick. The worker sends it only after its heartbeat
   * saw the queue's `cancels` counter change, never per job. Returns the ids it cancelled; throws
   * when Redis did not answer (the caller looks again at the next tick).
   */
  async cancelMarked(jobIds: string[] = this.jobIds): Promise<string[]> {
    if (jobIds.length === 0 || this.closed) return [];
    const { scripts, lockRenewTime } = this.holder;
    const calls: ScriptCall[] = [];
    for (let i = 0; i < jobIds.length; i += this.chunkSize) calls.push(scripts.cancelledAmongCall(jobIds.slice(i, i + this.chunkSize)));
    const replies = await withinMs(runPipelined(this.renewal.client(), calls), lockRenewTime);
    if (!replies) throw new Error(`the look for cancelled jobs among ${jobIds.length} got no answer within lockRenewTime (${lockRenewTime} ms)`);
    const cancelled: string[] = [];
    for (const [error, reply] of replies) {
      if (error) throw error;
      for (const { jobId, reason } of parseCancelled(reply)) if (this.cancel(jobId, reason, 'queue')) cancelled.push(jobId);
    }
    return cancelled;
  }

  /** Aborts the signal of every tracked job (close without waiting). */
  abortAll(reason: Error): void {
    for (const job of this.jobs.values()) job.abort(reason);
  }

  /** Stops the timer, waits for a tick in flight, forgets every job and unregisters the worker. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.passenger = undefined;
    await this.heartbeat.stop();
    this.unregister();
  }

  /**
   * Closes at once, without waiting for a tick in flight (Redis does not answer): every job is
   * forgotten, its lock left to lapse so another worker retries it, and the worker unregistered.
   */
  abandon(): void {
    this.closed = true;
    this.passenger = undefined;
    void this.heartbeat.stop();
    this.unregister();
  }

  private unregister(): void {
    if (this.unregistered) return;
    this.unregistered = true;
    for (const job of [...this.jobs.values()]) this.drop(job, 'closed');
    this.onClose();
    this.renewal.leave();
  }

  /** @internal True while `job` is the ownership this worker renews for its id. */
  holds(job: TrackedJob): boolean {
    return this.jobs.get(job.jobId) === job;
  }

  /** @internal Forgets one ownership (no-op if it is no longer the current one). */
  drop(job: TrackedJob, reason: LockReleasedEvent['reason']): void {
    if (!this.holds(job)) return;
    this.jobs.delete(job.jobId);
    if (this.jobs.size === 0 && !this.passenger) void this.heartbeat.stop();
    if (this.emit.observed('released')) {
      this.emit.released({ type: 'released', queue: this.holder.queue, workerId: this.holder.workerId, at: Date.now(), jobId: job.jobId, reason });
    }
  }

  /** The job is no longer this worker's: abort its signal, stop renewing it, say why. */
  private lose(job: TrackedJob, code: -2 | -6, reason: string, at: number): void {
    const { queue, workerId } = this.holder;
    job.lostCode = code;
    job.abort(new LockLostError(queue, job.jobId, code, reason));
    this.emit.renewalFailed({ type: 'renewalFailed', queue, workerId, at, jobId: job.jobId, code, reason });
    this.drop(job, 'lost');
  }

  /**
   * One heartbeat: every tracked job renewed by extendLocks-1, all chunks in one round trip, with
   * the passenger's commands (if one rides) after them in the same pipeline.
   */
  private async tick(lateByMs: number): Promise<void> {
    const { queue, workerId, lockDuration, heartbeatLateThreshold, scripts } = this.holder;
    const jobs = [...this.jobs.values()];
    const passenger = this.passenger;
    if (jobs.length === 0 && !passenger) return;
    const firedAt = Date.now();
    let oldest = firedAt;
    for (const job of jobs) if (job.renewedAt < oldest) oldest = job.renewedAt;

    const calls: ScriptCall[] = [];
    for (let i = 0; i < jobs.length; i += this.chunkSize) {
      calls.push(scripts.extendLocksCall(jobs.slice(i, i + this.chunkSize).map((job) => [job.jobId, job.token]), lockDuration));
    }
    const sentAt = Date.now();
    const inFlight = runPipelined(this.renewal.client(), calls, passenger && ((pipeline) => passenger.board(pipeline)));
    // The renewals are on the wire; now subscribers may run.
    if (jobs.length > 0 && lateByMs > heartbeatLateThreshold) {
      this.emit.heartbeatLate({ type: 'heartbeatLate', queue, workerId, at: firedAt, lateByMs, marginMs: oldest + lockDuration - firedAt, lockDuration, jobCount: jobs.length });
    }
    let replies: Array<[Error | null, unknown]> | undefined;
    let failure: Error | undefined;
    try {
      // At most one interval: a tick that waits for ever (a renewal connection that never becomes
      // ready) would stop the heartbeat without a word, since the next tick waits for this one.
      replies = await withinMs(inFlight, this.holder.lockRenewTime);
      const what = jobs.length > 0 ? `the renewals of ${jobs.length} jobs` : 'the heartbeat (no job held: its registry entry and the queue\'s limits)';
      if (!replies) failure = new Error(`${what} got no answer within lockRenewTime (${this.holder.lockRenewTime} ms)`);
    } catch (error) {
      failure = error as Error;
    }
    if (failure) {
      passenger?.arrive(failure);
      // Given up (abandon() dropped the connection): nobody is owed a report about these jobs.
      if (this.unregistered) return;
      this.emit.heartbeatError({ type: 'heartbeatError', queue, workerId, at: Date.now(), error: failure, jobCount: jobs.length });
      this.loseUnconfirmed(jobs);
      return;
    }
    passenger?.arrive(replies!.slice(calls.length));
    if (jobs.length === 0) return;
    const roundTripMs = Date.now() - sentAt;
    const recheck = this.apply(jobs, replies!.slice(0, calls.length), sentAt, roundTripMs, firedAt);
    if (recheck.length > 0) await this.recheck(recheck);
  }

  /**
   * After a tick that could not renew: a job whose last confirmed renewal was sent lockDuration ago
   * or more can no longer be shown to hold its lock, and another worker may take it after a sweep.
   * Its signal is aborted (-2) so the handler stops; a job being finished is its finish's to judge.
   */
  private loseUnconfirmed(jobs: TrackedJob[]): void {
    const now = Date.now();
    const { lockDuration } = this.holder;
    for (const job of jobs) {
      if (!this.holds(job) || job.releasing || job.renewedAt + lockDuration > now) continue;
      this.lose(job, -2, `no renewal of its lock was confirmed for lockDuration (${lockDuration} ms): it may have lapsed`, now);
    }
  }

  /**
   * A second look, job by job with extendLock-2, at the jobs extendLocks-1 could not judge. On a
   * Cluster whose slot is being migrated, extendLocks-1 declares only the stalled set and builds the
   * lock keys from the prefix: Redis runs it on whichever node holds the stalled set (or ASKs it to
   * the target when no node does), and there a lock still on the other node reads as missing (-2:
   * a false loss) or fails the call ("Script attempted to access a non local key"). extendLock-2
   * declares the lock and the stalled set, so Redis runs it only where both are (or answers TRYAGAIN,
   * which the Cluster client waits out): its answer is the truth. Only a job it cannot renew is lost.
   */
  private async recheck(jobs: TrackedJob[]): Promise<void> {
    const { queue, workerId, lockDuration, scripts } = this.holder;
    const sentAt = Date.now();
    let replies: Array<[Error | null, unknown]> | undefined;
    try {
      // Bounded like the tick itself: the next tick waits for this one.
      replies = await withinMs(runPipelined(this.renewal.client(), jobs.map((job) => scripts.extendLockCall(job.jobId, job.token, lockDuration))), this.holder.lockRenewTime);
      if (!replies) throw new Error(`the second look at ${jobs.length} locks got no answer within lockRenewTime (${this.holder.lockRenewTime} ms)`);
    } catch (error) {
      if (!this.unregistered) this.emit.heartbeatError({ type: 'heartbeatError', queue, workerId, at: Date.now(), error: error as Error, jobCount: jobs.length });
      return;
    }
    const at = Date.now();
    const renewedIds: string[] = [];
    replies.forEach(([error, reply], i) => {
      const job = jobs[i];
      if (error) {
        this.emit.heartbeatError({ type: 'heartbeatError', queue, workerId, at, error, jobCount: 1 });
      } else if (reply === 1) {
        job.renewedAt = sentAt;
        renewedIds.push(job.jobId);
      } else if (this.holds(job)) {
        job.lostCode = -2;
        // A job being finished is judged by its finish: the -2 may be the finish's own DEL.
        if (!job.releasing) this.lose(job, -2, codeMeaning(-2), at);
      }
    });
    if (renewedIds.length > 0) this.emit.renewed({ type: 'renewed', queue, workerId, at, jobIds: renewedIds, roundTripMs: at - sentAt, tickMs: at - sentAt });
  }

  /** A tick that threw (not a Redis error, which tick() reports itself): the heartbeat skipped, so say so. */
  private tickFailed(error: Error): void {
    const { queue, workerId } = this.holder;
    this.emit.heartbeatError({ type: 'heartbeatError', queue, workerId, at: Date.now(), error, jobCount: this.jobs.size });
  }

  /**
   * Reads a tick's replies: renewed jobs get a fresh renewedAt, jobs another token holds (-6) are
   * let go. Returns the jobs for a second look (recheck): those found without a lock (-2) and those
   * of a chunk that met a slot migration.
   */
  private apply(jobs: TrackedJob[], replies: Array<[Error | null, unknown]>, sentAt: number, roundTripMs: number, firedAt: number): TrackedJob[] {
    const { queue, workerId } = this.holder;
    const at = Date.now();
    const renewedIds: string[] = [];
    const lost: Array<[TrackedJob, -2 | -6]> = [];
    const recheck: TrackedJob[] = [];
    replies.forEach(([error, reply], chunk) => {
      const chunkJobs = jobs.slice(chunk * this.chunkSize, (chunk + 1) * this.chunkSize);
      if (error) {
        this.emit.heartbeatError({ type: 'heartbeatError', queue, workerId, at, error, jobCount: chunkJobs.length });
        if (MIGRATION_SPLIT.test(error.message)) recheck.push(...chunkJobs.filter((job) => this.holds(job)));
        return;
      }
      const failed = new Map<string, -2 | -6>();
      for (const failure of parseLockFailures(reply)) failed.set(failure.jobId, failure.code);
      for (const job of chunkJobs) {
        const code = failed.get(job.jobId);
        if (code === undefined) {
          job.renewedAt = sentAt;
          renewedIds.push(job.jobId);
        } else if (code === -2 && this.holds(job)) {
          recheck.push(job);
        } else if (this.holds(job)) {
          job.lostCode = code;
          // A job being finished is judged by its finish.
          if (!job.releasing) lost.push([job, code]);
        }
      }
    });
    if (renewedIds.length > 0) this.emit.renewed({ type: 'renewed', queue, workerId, at, jobIds: renewedIds, roundTripMs, tickMs: Date.now() - firedAt });
    for (const [job, code] of lost) this.lose(job, code, codeMeaning(code), at);
    return recheck;
  }
}
