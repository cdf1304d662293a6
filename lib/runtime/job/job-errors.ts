/** A job hash that cannot be read as a job (a field missing or not JSON). */
export class CorruptJobError extends Error {
  override readonly name = 'CorruptJobError';
  constructor(readonly jobId: string, detail: string) {
    super(`job ${jobId} is corrupt: ${detail}`);
  }
}

/**
 * A job that is not there any more: waitUntilFinished found neither its hash nor (among the newest
 * events) its end, or it was removed before it finished.
 */
export class JobNotFoundError extends Error {
  override readonly name = 'JobNotFoundError';
  constructor(readonly queue: string, readonly jobId: string, detail: string) {
    super(`job ${jobId} of queue ${queue} no longer exists: ${detail}`);
  }
}
