import type { Job } from '../job/job.js';

// What a Worker tells its listeners, and the one value its lifecycle is.

/** The events a Worker emits, with their arguments. */
export interface WorkerEvents {
  /** Both connections (the shared one and the blocking one) answered a PING, after run(). */
  ready: [];
  active: [job: Job];
  completed: [job: Job, result: unknown];
  /** A job this worker runs stored its progress (job.updateProgress). */
  progress: [job: Job, progress: unknown];
  /** `willRetry` is true when the job has attempts left and went back to wait or delayed. */
  failed: [job: Job, error: Error, willRetry: boolean];
  /** The worker lost a job's lock: its result was not reported (another worker may run it). */
  lockLost: [job: Job, error: Error];
  stalled: [jobId: string, movedTo: 'wait' | 'failed'];
  /** The queue had no ready job left for this worker. */
  drained: [];
  /** A Redis call, a sweep or a listener failed; also a close that ran past closeTimeout (CloseTimeoutError). */
  error: [error: Error];
  /** Something about the setup risks jobs (e.g. a maxmemory-policy other than noeviction); checked at start. */
  warning: [message: string];
  /** pause() took effect: this worker takes no new job. */
  paused: [];
  /** resume() took effect: this worker takes jobs again. */
  resumed: [];
  closing: [];
  closed: [];
}

/** The lifecycle, one value: created → running ⇄ paused → closing → closed (close() from any of the first three). */
export type WorkerState = 'created' | 'running' | 'paused' | 'closing' | 'closed';

/** Every move the lifecycle may make; any other is a bug, and throws. */
export const TRANSITIONS: Readonly<Record<WorkerState, readonly WorkerState[]>> = {
  created: ['running', 'closing'],
  running: ['paused', 'closing'],
  paused: ['running', 'closing'],
  closing: ['closed'],
  closed: [],
};

/** A worker event other than 'error' (which has its own path, reportError). */
export type PlainEvent = Exclude<keyof WorkerEvents, 'error'>;
