import type { ProcessorContext } from '../queue/processor.js';
import type { JobFields } from './sandbox-messages.js';

/**
 * The job a sandboxed handler gets (docs/sandbox.md): copies of the Job's fields, and the methods
 * that act on the job through the worker, each settling once the worker's own Job call settled.
 */
export interface SandboxedJob<Data = unknown> extends Omit<JobFields, 'data'> {
  data: Data;
  /** Stores progress (any JSON value) and emits the worker's `progress` event. */
  updateProgress(progress: unknown): Promise<void>;
  /** Appends a line to the job's log; resolves with how many lines it keeps. */
  log(line: string): Promise<number>;
  /** Replaces the job's data (job.data too, once stored). */
  updateData(data: Data): Promise<void>;
  /** Sends the running job to delayed until `timestamp`; then throw an error named DelayedError. */
  moveToDelayed(timestamp: number, token: string): Promise<void>;
  /** If this run fails, the job fails for good. */
  discard(): void;
  readonly discarded: boolean;
}

/** What a sandboxed handler gets besides the job: the in-process context, and the worker's rate limit. */
export interface SandboxedContext extends ProcessorContext {
  /**
   * The running worker's `worker.rateLimit(ms)` (docs/limits.md): no worker of the queue takes a job
   * for `ms`. Then throw an error named RateLimitError to give this job back without using an
   * attempt; thrown without it, RateLimitError fails the attempt as any error.
   */
  rateLimit(expireTimeMs: number): Promise<void>;
}

/**
 * The default export of a processor file: `(job, { token, signal, rateLimit }) => result`. `signal`
 * aborts when the worker gives the job up (lost lock, close(true)...), with an Error of the same
 * name and message as the worker's reason.
 */
export type SandboxedProcessor<Data = unknown, Result = unknown> = (job: SandboxedJob<Data>, context: SandboxedContext) => Promise<Result> | Result;
