/**
 * A job's handler ran past its timeout (`opts.timeout`, else the worker's `jobTimeout`): its signal
 * aborts with this, the job fails with this reason, and it is retried per its attempts and backoff.
 * A handler that returns later has its result refused.
 */
export class JobTimeoutError extends Error {
  override readonly name = 'JobTimeoutError';
  constructor(readonly jobId: string, readonly timeout: number) {
    super(`job ${jobId} timed out after ${timeout} ms`);
  }
}
