import { describe } from '../../protocol/names.js';
import { backoffDelay } from '../core/job-options.js';
import type { BackoffStrategy } from './worker-options.js';
import type { Job } from '../job/job.js';

/**
 * What becomes of a failed attempt that had attempts left: a retry after `delay` ms (0: at once),
 * or none. `refusal` says why a retry was refused for a fault (a custom type no strategy resolves,
 * a strategy that threw or answered nonsense, a bad retryAfter); a strategy's -1 has none.
 */
export type RetryDecision = { retry: true; delay: number } | { retry: false; refusal?: string };

/**
 * Decides the retry of a failed attempt that has attempts left (the caller has checked that):
 * after the error's `retryAfter` when it carries one (a 429's wait, say), else after the job's
 * backoff: a built-in type's wait, or what the worker's strategy answers for a custom type. It
 * never throws: a fault in any of these refuses the retry, and the job fails for good saying why,
 * rather than sitting in active with no one to finish it.
 */
export async function decideRetry(job: Job, error: Error, attemptsMade: number, strategy?: BackoffStrategy): Promise<RetryDecision> {
  let retryAfter: unknown;
  try {
    retryAfter = (error as { retryAfter?: unknown }).retryAfter;
  } catch (getterError) {
    return { retry: false, refusal: `reading the error's retryAfter threw: ${messageOf(getterError)}` };
  }
  if (retryAfter !== undefined && retryAfter !== null) return afterRetryAfter(retryAfter);
  const backoff = job.opts.backoff;
  const builtin = backoffDelay(backoff, attemptsMade);
  if (builtin !== undefined) return checked(builtin, `the job's backoff gives a wait of ${describe(builtin)} ms, not a whole number of 0 or more`);
  const type = String((backoff as { type: unknown }).type);
  if (!strategy) {
    return { retry: false, refusal: `backoff type "${type}" is a custom one and this worker has no settings.backoffStrategy to resolve it` };
  }
  let answer: unknown;
  try {
    answer = await strategy(attemptsMade, type, error, job);
  } catch (strategyError) {
    return { retry: false, refusal: `settings.backoffStrategy threw for backoff type "${type}": ${messageOf(strategyError)}` };
  }
  if (answer === -1) return { retry: false };
  return checked(answer, `settings.backoffStrategy answered ${describe(answer)} for backoff type "${type}"; it must answer a whole number of ms, 0 (retry at once) or -1 (no retry)`);
}

/**
 * An error's retryAfter: any number of ms, rounded up; one already past (a Retry-After date
 * behind the clock) retries at once. Anything but a number is refused, not guessed at.
 */
function afterRetryAfter(retryAfter: unknown): RetryDecision {
  if (typeof retryAfter !== 'number' || !Number.isFinite(retryAfter)) {
    return { retry: false, refusal: `the error's retryAfter is ${describe(retryAfter)}; it must be a number of ms` };
  }
  return { retry: true, delay: Math.max(0, Math.ceil(retryAfter)) };
}

/** A wait retryJob can take (a whole number of ms, 0 or more); else the refusal `what` describes. */
function checked(delay: unknown, what: string): RetryDecision {
  return Number.isInteger(delay) && (delay as number) >= 0 ? { retry: true, delay: delay as number } : { retry: false, refusal: what };
}

function messageOf(thrown: unknown): string {
  return thrown instanceof Error ? `${thrown.name}: ${thrown.message}` : describe(thrown);
}
