import { merge, Observable, Subject } from 'rxjs';
import { EchoMQOptionError } from '../../protocol/errors.js';
import type { SweepResult } from '../../protocol/script-shapes.js';
import type {
  HeartbeatErrorEvent, HeartbeatLateEvent, JobCancelledEvent, JobStalledEvent, LockAcquiredEvent, LockEvent,
  LockReleasedEvent, LockRenewalFailedEvent, LockRenewedEvent,
} from './lock-events.js';
import { SharedHeartbeat } from './heartbeat-timer.js';
import { RenewalConnections } from './renewal-connections.js';
import { WorkerLocks } from './worker-locks.js';
import { validateHolder, type LockEmitter, type LockHolder } from './lock-holder.js';

export { WorkerLocks } from './worker-locks.js';
export { LockLostError } from './lock-lost-error.js';
export { validateHolder, type LockHolder } from './lock-holder.js';
export type { JobLock } from './tracked-job.js';

/** extendLocks-1 calls carry at most this many jobs each by default; all chunks of a tick share one round trip. */
export const RENEWAL_CHUNK = 1000;

/** How a LockManager is built. */
export interface LockManagerOptions {
  /** Jobs per extendLocks-1 call; a tick sends all its calls in one pipeline. Default 1,000. */
  renewalChunkSize?: number;
}

/**
 * LockManager: the heartbeat of one or many workers. Each registered worker gets exactly one
 * timer, running only while it holds jobs; each tick renews every job it holds with extendLocks-1
 * (chunked, one pipelined round trip) on a renewal connection of the LockManager's own: one per
 * connection its workers share, made at the first tick, dropped when the last worker on it leaves
 * or the LockManager closes. The lock lifecycle comes out as RxJS observables; events
 * are emitted after the tick's commands are sent, so subscribing late, not at all, or slowly
 * never holds a renewal back.
 */
export class LockManager {
  private readonly acquired = new Subject<LockAcquiredEvent>();
  private readonly released = new Subject<LockReleasedEvent>();
  private readonly renewed = new Subject<LockRenewedEvent>();
  private readonly renewalFailed = new Subject<LockRenewalFailedEvent>();
  private readonly stalled = new Subject<JobStalledEvent>();
  private readonly heartbeatLate = new Subject<HeartbeatLateEvent>();
  private readonly heartbeatError = new Subject<HeartbeatErrorEvent>();
  private readonly cancelled = new Subject<JobCancelledEvent>();
  private readonly workers = new Map<string, WorkerLocks>();
  private readonly renewalConnections = new RenewalConnections();
  private readonly chunkSize: number;

  /** A job's lock was acquired (pickup or fetch-next). */
  readonly acquired$: Observable<LockAcquiredEvent> = this.acquired.asObservable();
  /** A job left its worker: finished, retried, lost, or the worker closed. */
  readonly released$: Observable<LockReleasedEvent> = this.released.asObservable();
  /** One event per worker per tick that renewed jobs, with the round-trip time. */
  readonly renewed$: Observable<LockRenewedEvent> = this.renewed.asObservable();
  /** One event per job lost: -2 (the lock lapsed) or -6 (another token holds it). */
  readonly renewalFailed$: Observable<LockRenewalFailedEvent> = this.renewalFailed.asObservable();
  /** One event per job a stalled sweep moved, back to wait or to failed. */
  readonly stalled$: Observable<JobStalledEvent> = this.stalled.asObservable();
  /** A tick fired late by more than the worker's threshold: a warning before a job is lost. */
  readonly heartbeatLate$: Observable<HeartbeatLateEvent> = this.heartbeatLate.asObservable();
  /** A tick (or one of its chunks) could not reach Redis; the next tick tries again. */
  readonly heartbeatError$: Observable<HeartbeatErrorEvent> = this.heartbeatError.asObservable();
  /** A running job was cancelled (worker.cancelJob, cancelAllJobs, or queue.cancelJob from anywhere). */
  readonly cancelled$: Observable<JobCancelledEvent> = this.cancelled.asObservable();
  /** All of the above, for one subscription. */
  readonly events$: Observable<LockEvent> = merge(
    this.acquired$, this.released$, this.renewed$, this.renewalFailed$, this.stalled$,
    this.heartbeatLate$, this.heartbeatError$, this.cancelled$,
  );

  constructor(options: LockManagerOptions = {}) {
    const chunk = options.renewalChunkSize ?? RENEWAL_CHUNK;
    if (!Number.isInteger(chunk) || chunk <= 0) throw new EchoMQOptionError('renewalChunkSize', `must be a whole number above 0, got ${String(chunk)}`);
    this.chunkSize = chunk;
  }

  private closed = false;

  /**
   * Registers a worker (its timing is validated); its locks are tracked through the handle returned.
   * Refused once closed. `sameTimerAs`: a worker of a partitioned queue registers once per
   * partition, each after the first on the first one's timer (one timer per worker).
   */
  register(holder: LockHolder, sameTimerAs?: WorkerLocks): WorkerLocks {
    if (this.closed) throw new Error(`this LockManager is closed: worker ${holder.workerId} would run jobs with no heartbeat`);
    // A worker of a partitioned queue registers once per partition (each is a queue of its own to the scripts).
    const entry = `${holder.workerId}\u0000${holder.queue}`;
    if (this.workers.has(entry)) throw new Error(`worker ${holder.workerId} is already registered with this LockManager for queue ${holder.queue}`);
    validateHolder(holder); // before it takes a share of a renewal connection
    const lease = this.renewalConnections.join(holder.client);
    const timer = sameTimerAs?.sharedHeartbeat ?? new SharedHeartbeat(holder.lockRenewTime);
    const locks = new WorkerLocks(holder, this.chunkSize, this.emitter(), lease, () => this.workers.delete(entry), timer);
    this.workers.set(entry, locks);
    return locks;
  }

  /** The ids of the registered workers. */
  get workerIds(): string[] {
    return [...new Set([...this.workers.values()].map((locks) => locks.holder.workerId))];
  }

  /** How many jobs the LockManager tracks, for one worker (every partition it serves) or all. */
  trackedCount(workerId?: string): number {
    let total = 0;
    for (const locks of this.workers.values()) if (workerId === undefined || locks.holder.workerId === workerId) total += locks.size;
    return total;
  }

  /**
   * How many jobs the LockManager tracks per queue (a partitioned queue's partitions each by their
   * own name, as lock events name them). Read on demand (a metrics scrape), never kept up to date.
   */
  trackedByQueue(): Map<string, number> {
    const byQueue = new Map<string, number>();
    for (const locks of this.workers.values()) byQueue.set(locks.holder.queue, (byQueue.get(locks.holder.queue) ?? 0) + locks.size);
    return byQueue;
  }

  /** How many renewal connections are open now (at most one per connection its workers share). */
  get renewalConnectionCount(): number {
    return this.renewalConnections.openCount;
  }

  /** How many heartbeat timers are running now (at most one per registered worker). */
  get activeTimers(): number {
    const timers = new Set<unknown>();
    for (const locks of this.workers.values()) if (locks.timerActive) timers.add(locks.sharedHeartbeat);
    return timers.size;
  }

  /** Reports what a stalled sweep moved (called by the worker that ran it). */
  reportStalled(queue: string, workerId: string, result: SweepResult): void {
    const at = Date.now();
    for (const moved of result.movedToWait) this.stalled.next({ type: 'stalled', queue, workerId, at, ...moved, movedTo: 'wait' });
    for (const moved of result.movedToFailed) this.stalled.next({ type: 'stalled', queue, workerId, at, ...moved, movedTo: 'failed' });
  }

  /** Stops every worker's timer, drops the renewal connections and completes the observables. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.workers.values()].map((locks) => locks.close()));
    this.renewalConnections.closeAll();
    for (const subject of [this.acquired, this.released, this.renewed, this.renewalFailed, this.stalled, this.heartbeatLate, this.heartbeatError, this.cancelled]) {
      subject.complete();
    }
  }

  private emitter(): LockEmitter {
    return {
      observed: (kind) => (kind === 'acquired' ? this.acquired : this.released).observed,
      acquired: (event) => this.acquired.next(event),
      released: (event) => this.released.next(event),
      renewed: (event) => this.renewed.next(event),
      renewalFailed: (event) => this.renewalFailed.next(event),
      heartbeatLate: (event) => this.heartbeatLate.next(event),
      heartbeatError: (event) => this.heartbeatError.next(event),
      cancelled: (event) => this.cancelled.next(event),
    };
  }
}
