import type { Job } from '../job/job.js';

// The processor's contract: what a handler of a queue's jobs is given and answers, in process
// (worker/job-runner.ts) or in a sandbox (sandbox/).

/** What a processor gets besides the job. */
export interface ProcessorContext {
  /** The lock token of this ownership of the job. */
  token: string;
  /**
   * Aborted when the lock is lost (reason: LockLostError), the worker closes without waiting, the
   * job times out (JobTimeoutError) or is cancelled (JobCancelledError). After a timeout or a cancel
   * the job fails at once: the handler is not waited for, and what it returns later is refused.
   */
  signal: AbortSignal;
}

export type ProcessorFunction<Data = unknown, Result = unknown> = (job: Job<Data, Result>, context: ProcessorContext) => Promise<Result> | Result;
