import { EchoMQOptionError } from '../../protocol/errors.js';
import { describe } from '../../protocol/names.js';

/**
 * A job was cancelled (`queue.cancelJob` from any process, or `worker.cancelJob` /
 * `worker.cancelAllJobs` of the worker running it): its signal aborts with this, and the job fails
 * with this reason, not retried whatever attempts it has left. `reason` is the caller's text.
 */
export class JobCancelledError extends Error {
  override readonly name = 'JobCancelledError';
  constructor(readonly jobId: string, readonly reason?: string) {
    super(reason === undefined || reason === '' ? `job ${jobId} was cancelled` : `job ${jobId} was cancelled: ${reason}`);
  }
}

/** The longest cancel reason: it becomes the job's failedReason. */
export const MAX_CANCEL_REASON_LENGTH = 1000;

/** A cancel's `reason`: absent, or a string of at most MAX_CANCEL_REASON_LENGTH characters. */
export function assertCancelReason(reason: unknown): asserts reason is string | undefined {
  if (reason === undefined) return;
  if (typeof reason !== 'string' || reason.length > MAX_CANCEL_REASON_LENGTH) {
    throw new EchoMQOptionError('reason', `must be a string of at most ${MAX_CANCEL_REASON_LENGTH} characters, got ${describe(reason)}`);
  }
}
