/**
 * Throw it from a processor when the work it calls says "too many requests" (after
 * `await worker.rateLimit(ms)`): the job goes back to wait, next in line, without using an
 * attempt, and runs again once the limit lifts. docs/limits.md.
 */
export class RateLimitError extends Error {
  override readonly name = 'RateLimitError';

  constructor(message = 'the queue is rate limited: the job goes back to wait, its attempt not counted') {
    super(message);
  }
}

/** A RateLimitError, also one of another copy of the library (told by its name, as BullMQ does). */
export function isRateLimitError(error: unknown): boolean {
  return error instanceof RateLimitError || (error instanceof Error && error.name === 'RateLimitError');
}
