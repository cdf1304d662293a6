import { merge, Observable, Subject } from 'rxjs';
import { codeMeaning } from '../protocol/codes.js';
import { runPipelined } from '../protocol/script.js';
import { parseLockFailures, type Scripts, type SweepResult } from '../protocol/scripts.js';
import type {
  HeartbeatErrorEvent, HeartbeatLateEvent, JobStalledEvent, LockAcquiredEvent, LockEvent,
  LockReleasedEvent, LockRenewalFailedEvent, LockRenewedEvent,
} from './lock-events.js';
import { Periodic } from './periodic.js';

/** extendLocks-1 calls carry at most this many jobs each; all chunks of a tick share one round trip. */
export const RENEWAL_CHUNK = 1000;

/** Why a job's signal was aborted: its lock is gone or another worker holds it. */
export class LockLostError extends Error {
  override readonly name = 'LockLostError';
  constructor(readonly queue: string, readonly jobId: string, readonly code: -2 | -6) {
    super(`lost the lock of job ${jobId} in queue ${queue}: ${codeMeaning(code)}; its result will not be reported`);
  }
}

/** What a worker tells the LockManager about itself when it registers. */
export interface LockHolder {
  workerId: string;
  queue: string;
  scripts: Scripts;
  lockDuration: number;
  lockRenewTime: number;
  heartbeatLateThreshold: number;
}

interface TrackedJob {
  jobId: string;
  token: string;
  controller: AbortController;
  /** When the lock was last set (acquired or renewed), at worst: the time the command was sent. */
  renewedAt: number;
  /** The worker is finishing it; a failure reported now may just be the finish's own DEL. */
  releasing: boolean;
  lostCode?: -2 | -6;
}

/**
 * LockManager: owns the heartbeat of one or many workers. Each registered worker gets exactly one
 * timer, running only while it holds jobs; each tick renews every job it holds with extendLocks-1
 * (chunked, one pipelined round trip). Lock lifecycle events come out as RxJS observables.
 * Subscribing late or not at all changes nothing: events are emitted after the tick's work.
 */
export class LockManager {
  private readonly acquired = new Subject<LockAcquiredEvent>();
  private readonly released = new Subject<LockReleasedEvent>();
  private readonly renewed = new Subject<LockRenewedEvent>();
  private readonly renewalFailed = new Subject<LockRenewalFailedEvent>();
  private readonly stalled = new Subject<JobStalledEvent>();
  private readonly heartbeatLate = new Subject<HeartbeatLateEvent>();
  private readonly heartbeatError = new Subject<HeartbeatErrorEvent>();
  private readonly workers = new Map<string, WorkerLocks>();

  readonly acquired$: Observable<LockAcquiredEvent> = this.acquired.asObservable();
  readonly released$: Observable<LockReleasedEvent> = this.released.asObservable();
  /** One event per worker per tick that renewed jobs. */
  readonly renewed$: Observable<LockRenewedEvent> = this.renewed.asObservable();
  /** One event per job lost: -2 (lapsed) or -6 (another worker holds it). */
  readonly renewalFailed$: Observable<LockRenewalFailedEvent> = this.renewalFailed.asObservable();
  /** One event per job a stalled sweep moved. */
  readonly stalled$: Observable<JobStalledEvent> = this.stalled.asObservable();
  /** A tick fired late by more than the worker's threshold: a warning before a job is lost. */
  readonly heartbeatLate$: Observable<HeartbeatLateEvent> = this.heartbeatLate.asObservable();
  /** A tick could not reach Redis. */
  readonly heartbeatError$: Observable<HeartbeatErrorEvent> = this.heartbeatError.asObservable();
  /** All of the above, for one subscription. */
  readonly events$: Observable<LockEvent> = merge(
    this.acquired$, this.released$, this.renewed$, this.renewalFailed$, this.stalled$,
    this.heartbeatLate$, this.heartbeatError$,
  );

  /** Registers a worker; its locks are tracked through the handle returned. */
  register(holder: LockHolder): WorkerLocks {
    if (this.workers.has(holder.workerId)) throw new Error(`worker ${holder.workerId} is already registered with this LockManager`);
    const locks = new WorkerLocks(holder, this.emitter(), () => this.workers.delete(holder.workerId));
    this.workers.set(holder.workerId, locks);
    return locks;
  }

  /** How many jobs the LockManager tracks, for one worker or all. */
  trackedCount(workerId?: string): number {
    if (workerId !== undefined) return this.workers.get(workerId)?.size ?? 0;
    let total = 0;
    for (const locks of this.workers.values()) total += locks.size;
    return total;
  }

  /** How many heartbeat timers are running now (at most one per registered worker). */
  get activeTimers(): number {
    let count = 0;
    for (const locks of this.workers.values()) if (locks.timerActive) count++;
    return count;
  }

  /** Reports what a stalled sweep moved (called by the worker that ran it). */
  reportStalled(queue: string, workerId: string, result: SweepResult): void {
    const at = Date.now();
    for (const moved of result.movedToWait) this.stalled.next({ type: 'stalled', queue, workerId, at, ...moved, movedTo: 'wait' });
    for (const moved of result.movedToFailed) this.stalled.next({ type: 'stalled', queue, workerId, at, ...moved, movedTo: 'failed' });
  }

  /** Stops every worker's timer and completes the observables. */
  async close(): Promise<void> {
    await Promise.all([...this.workers.values()].map((locks) => locks.close()));
    for (const subject of [this.acquired, this.released, this.renewed, this.renewalFailed, this.stalled, this.heartbeatLate, this.heartbeatError]) {
      subject.complete();
    }
  }

  private emitter(): LockEmitter {
    return {
      acquired: (event) => this.acquired.next(event),
      released: (event) => this.released.next(event),
      renewed: (event) => this.renewed.next(event),
      renewalFailed: (event) => this.renewalFailed.next(event),
      heartbeatLate: (event) => this.heartbeatLate.next(event),
      heartbeatError: (event) => this.heartbeatError.next(event),
    };
  }
}

interface LockEmitter {
  acquired(event: LockAcquiredEvent): void;
  released(event: LockReleasedEvent): void;
  renewed(event: LockRenewedEvent): void;
  renewalFailed(event: LockRenewalFailedEvent): void;
  heartbeatLate(event: HeartbeatLateEvent): void;
  heartbeatError(event: HeartbeatErrorEvent): void;
}

/** One worker's tracked jobs and its one heartbeat timer. */
export class WorkerLocks {
  private readonly jobs = new Map<string, TrackedJob>();
  private readonly heartbeat: Periodic;
  private closed = false;

  constructor(
    readonly holder: LockHolder,
    private readonly emit: LockEmitter,
    private readonly onClose: () => void,
  ) {
    this.heartbeat = new Periodic(holder.lockRenewTime, (lateBy) => this.tick(lateBy));
  }

  get size(): number {
    return this.jobs.size;
  }

  /** True once the worker closed its locks: nothing is renewed any more. */
  get isClosed(): boolean {
    return this.closed;
  }

  get timerActive(): boolean {
    return this.heartbeat.active;
  }

  /** Starts renewing a job just picked up; returns the signal that aborts if its lock is lost. */
  track(jobId: string, token: string, attemptsStarted: number, acquiredAt = Date.now()): AbortSignal {
    const controller = new AbortController();
    this.jobs.set(jobId, { jobId, token, controller, renewedAt: acquiredAt, releasing: false });
    if (!this.closed) this.heartbeat.start();
    this.emit.acquired({ type: 'acquired', queue: this.holder.queue, workerId: this.holder.workerId, at: Date.now(), jobId, attemptsStarted });
    return controller.signal;
  }

  /** The job is being finished: keep renewing it, but a failure now is not a loss to report. */
  beginRelease(jobId: string): void {
    const job = this.jobs.get(jobId);
    if (job) job.releasing = true;
  }

  /** The code with which the job's lock was found lost, if it was. */
  lostCode(jobId: string): -2 | -6 | undefined {
    return this.jobs.get(jobId)?.lostCode;
  }

  isTracked(jobId: string): boolean {
    return this.jobs.has(jobId);
  }

  /** Stops renewing a job; the timer stops when the worker holds no more jobs. */
  release(jobId: string, reason: LockReleasedEvent['reason']): void {
    if (!this.jobs.delete(jobId)) return;
    if (this.jobs.size === 0) void this.heartbeat.stop();
    this.emit.released({ type: 'released', queue: this.holder.queue, workerId: this.holder.workerId, at: Date.now(), jobId, reason });
  }

  /** Aborts the signal of every tracked job (close without waiting). */
  abortAll(reason: Error): void {
    for (const job of this.jobs.values()) job.controller.abort(reason);
  }

  /** Stops the timer, forgets every job and unregisters the worker. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.heartbeat.stop();
    for (const jobId of [...this.jobs.keys()]) this.release(jobId, 'closed');
    this.onClose();
  }

  /** One heartbeat: every tracked job renewed by extendLocks-1, all chunks in one round trip. */
  private async tick(lateByMs: number): Promise<void> {
    const { queue, workerId, lockDuration, heartbeatLateThreshold, scripts } = this.holder;
    const firedAt = Date.now();
    const jobs = [...this.jobs.values()];
    if (jobs.length === 0) return;
    if (lateByMs > heartbeatLateThreshold) {
      let oldest = firedAt;
      for (const job of jobs) oldest = Math.min(oldest, job.renewedAt);
      this.emit.heartbeatLate({ type: 'heartbeatLate', queue, workerId, at: firedAt, lateByMs, marginMs: oldest + lockDuration - firedAt, jobCount: jobs.length });
    }

    const calls = [];
    for (let i = 0; i < jobs.length; i += RENEWAL_CHUNK) {
      calls.push(scripts.extendLocksCall(jobs.slice(i, i + RENEWAL_CHUNK).map((job) => [job.jobId, job.token]), lockDuration));
    }
    const sentAt = Date.now();
    let replies: Array<[Error | null, unknown]>;
    try {
      replies = await runPipelined(scripts.client, calls);
    } catch (error) {
      this.emit.heartbeatError({ type: 'heartbeatError', queue, workerId, at: Date.now(), error: error as Error, jobCount: jobs.length });
      return;
    }
    const roundTripMs = Date.now() - sentAt;

    const lost = new Map<string, -2 | -6>();
    const failedChunks = new Set<number>();
    replies.forEach(([error, reply], chunk) => {
      if (error) {
        failedChunks.add(chunk);
        this.emit.heartbeatError({ type: 'heartbeatError', queue, workerId, at: Date.now(), error, jobCount: Math.min(RENEWAL_CHUNK, jobs.length - chunk * RENEWAL_CHUNK) });
        return;
      }
      for (const failure of parseLockFailures(reply)) lost.set(failure.jobId, failure.code);
    });

    const renewedIds: string[] = [];
    const lostEvents: LockRenewalFailedEvent[] = [];
    jobs.forEach((job, index) => {
      if (failedChunks.has(Math.floor(index / RENEWAL_CHUNK))) return;
      const code = lost.get(job.jobId);
      if (code === undefined) {
        job.renewedAt = sentAt;
        renewedIds.push(job.jobId);
        return;
      }
      if (this.jobs.get(job.jobId) !== job) return; // released while the tick was in flight
      job.lostCode = code;
      if (job.releasing) return; // the finish in flight decides; it reports the loss itself
      this.jobs.delete(job.jobId);
      job.controller.abort(new LockLostError(queue, job.jobId, code));
      lostEvents.push({ type: 'renewalFailed', queue, workerId, at: Date.now(), jobId: job.jobId, code, reason: codeMeaning(code) });
    });
    if (this.jobs.size === 0) void this.heartbeat.stop();

    if (renewedIds.length > 0) this.emit.renewed({ type: 'renewed', queue, workerId, at: Date.now(), jobIds: renewedIds, roundTripMs });
    for (const event of lostEvents) {
      this.emit.renewalFailed(event);
      this.emit.released({ type: 'released', queue, workerId, at: event.at, jobId: event.jobId, reason: 'lost' });
    }
  }
}
