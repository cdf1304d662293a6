import { EchoMQError, EchoMQOptionError } from '../../protocol/errors.js';
import { describe } from '../../protocol/names.js';
import type { Finish } from '../../protocol/script-shapes.js';
import { backoffDelay, keepRule, type JobOptions } from '../core/job-options.js';
import { toJson } from '../core/serialize.js';
import { isUnrecoverableError, UnrecoverableError } from '../core/unrecoverable-error.js';
import type { JobContext } from './job-context.js';

// The moves of a job taken by hand (worker.getNextJob(token): BullMQ's "manually processing
// jobs"). The caller holds the job's lock under `token` and releases it with one of these; each
// checks the lock as a worker's release does, and a refusal changes nothing: EchoMQError -2 (the
// lock lapsed), -6 (another token holds it), -3 (not active), -1 (gone). No heartbeat renews such
// a lock: extendLock does, when the caller asks.

const STACKTRACE_LIMIT = 10;

/** What the moves read and update of a Job (job.ts passes itself). */
export interface HandJob {
  readonly id: string;
  readonly opts: JobOptions;
  stacktrace: string[];
  readonly parentKey?: string;
  readonly discarded: boolean;
  attemptsMade: number;
  returnvalue?: unknown;
  finishedOn?: number;
  failedReason?: string;
}

/** BullMQ's job.moveToCompleted(returnValue, token): completed, kept or removed by its removeOnComplete. */
export async function completeByHand(job: HandJob, context: JobContext, returnValue: unknown, token: unknown): Promise<void> {
  assertToken(token);
  // A parent a failParentOnFailure child failed while it was held does not complete: it fails, as a worker's would.
  const childFailed = await context.client.hget(context.keys.job(job.id), 'cfr');
  if (childFailed !== null) return failByHand(job, context, new UnrecoverableError(childFailed), token);
  const value = toJson(returnValue ?? null, 'returnValue');
  const [keepCount, keepAgeMs] = keepRule(job.opts.removeOnComplete);
  const now = Date.now();
  await finishByHand(job, context, { jobId: job.id, token, timestamp: now, outcome: 'completed', value, stacktrace: '', keepCount, keepAgeMs });
  job.returnvalue = returnValue;
  job.attemptsMade++;
  job.finishedOn = now;
}

/**
 * BullMQ's job.moveToFailed(error, token): a failed attempt. With attempts left (and not an
 * UnrecoverableError) it is retried after the error's retryAfter or its built-in backoff
 * (retryJob-12); else, or with a custom backoff type (only a running worker's
 * settings.backoffStrategy resolves one), it fails for good, kept or removed by its removeOnFail.
 */
export async function failByHand(job: HandJob, context: JobContext, error: unknown, token: unknown): Promise<void> {
  assertToken(token);
  const failure = error instanceof Error ? error : new Error(String(error));
  const attemptsMade = job.attemptsMade + 1;
  const failedReason = failure.message || String(failure);
  const lines = [...job.stacktrace, failure.stack ?? String(failure)].slice(-STACKTRACE_LIMIT);
  const stacktrace = JSON.stringify(lines);
  const now = Date.now();
  const retry = attemptsMade < (job.opts.attempts ?? 1) && !isUnrecoverableError(failure) && !job.discarded;
  const delay = retry ? retryDelay(job, failure, attemptsMade) : undefined;
  if (delay !== undefined) {
    await context.scripts.retryJob({ jobId: job.id, token, timestamp: now, delay, failedReason, stacktrace });
    context.wake?.();
  } else {
    const [keepCount, keepAgeMs] = keepRule(job.opts.removeOnFail);
    await finishByHand(job, context, { jobId: job.id, token, timestamp: now, outcome: 'failed', value: failedReason, stacktrace, keepCount, keepAgeMs });
    job.finishedOn = now;
  }
  job.attemptsMade = attemptsMade;
  job.failedReason = failedReason;
  job.stacktrace = lines;
}

/** BullMQ's job.moveToWait(token): back to wait, next in line, its attempt not counted (moveJobFromActiveToWait-11). */
export async function giveBackByHand(job: HandJob, context: JobContext, token: unknown): Promise<void> {
  assertToken(token);
  await context.scripts.moveJobFromActiveToWait(job.id, token);
  context.wake?.();
}

/** BullMQ's job.extendLock(token, duration): 1 when the lock was renewed, 0 when `token` does not hold it. */
export async function extendLockByHand(job: HandJob, context: JobContext, token: unknown, duration: unknown): Promise<number> {
  assertToken(token);
  if (!Number.isInteger(duration) || (duration as number) <= 0) throw new EchoMQOptionError('duration', `must be a whole number of ms above 0, got ${describe(duration)}`);
  return (await context.scripts.extendLock(job.id, token, duration as number)) ? 1 : 0;
}

/**
 * A final finish, by finishFlowJobs-15 (one job, no fetch-next): a child of a flow leaves its
 * notice, which is delivered next, and a parent removed takes its flow keys, as a worker's finish.
 */
async function finishByHand(job: HandJob, context: JobContext, finish: Finish): Promise<void> {
  const [result] = await context.scripts.finishFlowJobs([finish], finish.timestamp, 0);
  if (result instanceof EchoMQError) throw result;
  if (job.parentKey !== undefined) await context.flowOperations.deliverNotice(context, job.id);
}

/** The wait before a retry by hand: the error's retryAfter, else the job's built-in backoff; undefined for a custom type. */
function retryDelay(job: HandJob, error: Error, attemptsMade: number): number | undefined {
  const retryAfter = (error as { retryAfter?: unknown }).retryAfter;
  if (typeof retryAfter === 'number' && Number.isFinite(retryAfter)) return Math.max(0, Math.ceil(retryAfter));
  const delay = backoffDelay(job.opts.backoff, attemptsMade);
  return delay !== undefined && Number.isInteger(delay) && delay >= 0 ? delay : undefined;
}

function assertToken(token: unknown): asserts token is string {
  if (typeof token !== 'string' || token.length === 0) throw new EchoMQOptionError('token', `must be the lock token the job was taken with, got ${describe(token)}`);
}
