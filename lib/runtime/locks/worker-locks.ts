import { runPipelined, type ScriptCall } from '../../protocol/script.js';
import { parseCancelled } from '../../protocol/script-replies.js';
import type { JobCancelledEvent, LockReleasedEvent } from './lock-events.js';
import { JobCancelledError } from '../core/job-cancelled-error.js';
import { withinMs } from '../core/within-ms.js';
import type { HeartbeatTimer, SharedHeartbeat } from './heartbeat-timer.js';
import type { LockEmitter, LockHolder, TickPassenger } from './lock-holder.js';
import { LockLostError } from './lock-lost-error.js';
import type { RenewalLease } from './renewal-connections.js';
import { TrackedJob, type JobLock } from './tracked-job.js';
import { HeartbeatTick } from './heartbeat-tick.js';

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
    const tick = new HeartbeatTick({
      holder, chunkSize, emit, renewal, holds: (job) => this.holds(job), lose: (job, code, reason, at) => this.lose(job, code, reason, at),
      unregistered: () => this.unregistered,
    });
    this.heartbeat = sharedHeartbeat.join((lateBy) => tick.run([...this.jobs.values()], this.passenger, lateBy).catch((error: Error) => this.tickFailed(error)));
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

  /** A tick that threw (not a Redis error, which tick() reports itself): the heartbeat skipped, so say so. */
  private tickFailed(error: Error): void {
    const { queue, workerId } = this.holder;
    this.emit.heartbeatError({ type: 'heartbeatError', queue, workerId, at: Date.now(), error, jobCount: this.jobs.size });
  }
}
