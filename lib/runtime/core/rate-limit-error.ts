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
