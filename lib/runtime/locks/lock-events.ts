import { filter, type MonoTypeOperatorFunction } from 'rxjs';

/** Fields every lock event carries. */
export interface LockEventBase {
  queue: string;
  workerId: string;
  /** When it happened, ms since the epoch. */
  at: number;
}

/** A job's lock was acquired at pickup (moveToActive-11 or fetch-next). */
export interface LockAcquiredEvent extends LockEventBase {
  type: 'acquired';
  jobId: string;
  /** The job's fencing number (attemptsStarted) for this ownership. */
  attemptsStarted: number;
}

/**
 * A job left this worker: finished, retried, moved to delayed or to waiting-children, given back to wait for a rate limit
 * (requeued: the handler threw RateLimitError), lost, the worker closed, or (a job scheduler's job
 * of a missed slot) skipped before its handler ran.
 */
export interface LockReleasedEvent extends LockEventBase {
  type: 'released';
  jobId: string;
  reason: 'completed' | 'failed' | 'retried' | 'requeued' | 'lost' | 'closed' | 'skipped' | 'delayed' | 'waiting-children';
}

/** One heartbeat tick renewed these jobs. */
export interface LockRenewedEvent extends LockEventBase {
  type: 'renewed';
  jobIds: string[];
  /** The extendLocks-1 round trip, ms (all chunks pipelined in one). */
  roundTripMs: number;
  /** The whole tick, ms: building the calls, the round trip, reading the replies. */
  tickMs: number;
}

/** A renewal found the lock gone (-2) or held by another token (-6): the job is not this worker's. */
export interface LockRenewalFailedEvent extends LockEventBase {
  type: 'renewalFailed';
  jobId: string;
  code: -2 | -6;
  reason: string;
}

/** A stalled sweep moved a job: back to wait, or to failed past maxStalledCount. */
export interface JobStalledEvent extends LockEventBase {
  type: 'stalled';
  jobId: string;
  stalledCount: number;
  movedTo: 'wait' | 'failed';
}

/**
 * A heartbeat tick fired late, usually because the event loop was blocked. `marginMs` is how much
 * of the lock TTL the worker's least fresh lock had left, at worst, when the tick fired: at or
 * below 0 that lock may have lapsed already (its renewal will tell: renewalFailed$ with -2).
 */
export interface HeartbeatLateEvent extends LockEventBase {
  type: 'heartbeatLate';
  /** How long after its due time the tick fired, ms. */
  lateByMs: number;
  /** lockDuration minus the age of the least fresh lock at fire time, ms. */
  marginMs: number;
  /** The worker's lockDuration, to read marginMs against. */
  lockDuration: number;
  /** How many jobs the tick renewed. */
  jobCount: number;
}

/** A tick could not reach Redis; the locks are tried again on the next tick. */
export interface HeartbeatErrorEvent extends LockEventBase {
  type: 'heartbeatError';
  error: Error;
  jobCount: number;
}

/**
 * A running job was cancelled: its signal aborted, and its worker fails it (not retried). `by` says
 * who asked: this worker (`worker.cancelJob`, `cancelAllJobs`) or a queue in any process
 * (`queue.cancelJob`, seen at this worker's next heartbeat tick).
 */
export interface JobCancelledEvent extends LockEventBase {
  type: 'cancelled';
  jobId: string;
  /** The caller's reason, if it gave one. */
  reason?: string;
  by: 'worker' | 'queue';
}

/** Every lock event, as events$ carries them; switch on `type`. */
export type LockEvent =
  | LockAcquiredEvent | LockReleasedEvent | LockRenewedEvent | LockRenewalFailedEvent
  | JobStalledEvent | HeartbeatLateEvent | HeartbeatErrorEvent | JobCancelledEvent;

/** Narrows a lock event stream to one queue. */
export function forQueue<T extends { queue: string }>(queue: string): MonoTypeOperatorFunction<T> {
  return filter((event) => event.queue === queue);
}

/** Narrows a lock event stream to one worker. */
export function forWorker<T extends { workerId: string }>(workerId: string): MonoTypeOperatorFunction<T> {
  return filter((event) => event.workerId === workerId);
}
