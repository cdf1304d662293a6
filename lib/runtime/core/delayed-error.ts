/**
 * Throw it from a processor right after `await job.moveToDelayed(timestamp, token)`: the job was
 * sent to delayed by its handler, so the worker neither completes nor fails it (BullMQ's name).
 * Thrown without that move, it is an ordinary failure.
 */
export class DelayedError extends Error {
  override readonly name = 'DelayedError';

  constructor(message = 'the job was moved to delayed by its handler') {
    super(message);
  }
}

/** A DelayedError, also one of another copy of the library (told by its name, as BullMQ does). */
export function isDelayedError(error: unknown): boolean {
  return error instanceof DelayedError || (error instanceof Error && error.name === 'DelayedError');
}
