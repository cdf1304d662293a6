import { EchoMQError, EchoMQOptionError } from '../../protocol/errors.js';
import { describe } from '../../protocol/names.js';
import { DEFAULTS } from '../core/defaults.js';
import type { JobContext, JobRun } from './job-context.js';
import { DEFAULT_MAX_DATA_BYTES, toJson } from '../core/serialize.js';

/** What job.changePriority takes (BullMQ's shape). */
export interface PriorityChange {
  /** 0 (none, the default) or 1 (highest) to 2,097,151. */
  priority?: number;
  /** With priority 0: the job is taken before the other waiting jobs. Default false. */
  lifo?: boolean;
}

/** Replaces the job's data; refused with EchoMQOptionError (nothing sent) when it is no JSON or too large. */
export async function updateJobData(context: JobContext, jobId: string, data: unknown): Promise<void> {
  const json = toJson(data, 'data', context.maxDataSize ?? DEFAULT_MAX_DATA_BYTES);
  await context.control.updateData(jobId, json);
}

/** A delayed job becomes due `delay` ms from now. */
export async function changeJobDelay(context: JobContext, jobId: string, delay: unknown): Promise<number> {
  const now = Date.now();
  if (!Number.isSafeInteger(delay) || (delay as number) < 0 || !Number.isSafeInteger(now + (delay as number))) {
    throw new EchoMQOptionError('delay', `must be a whole number of ms >= 0, got ${describe(delay)}`);
  }
  await context.control.changeDelay(jobId, delay as number, now);
  // A partitioned queue's workers learn the partition's next due time from a pickup there.
  context.wake?.();
  return delay as number;
}

/** Stores the job's priority, and places a ready job again by it; returns the priority stored. */
export async function changeJobPriority(context: JobContext, jobId: string, change: unknown): Promise<number> {
  if (typeof change !== 'object' || change === null || Array.isArray(change)) {
    throw new EchoMQOptionError('changePriority', `takes { priority?, lifo? }, got ${describe(change)}`);
  }
  const { priority = 0, lifo = false } = change as PriorityChange;
  if (!Number.isInteger(priority) || priority < 0 || priority > DEFAULTS.maxPriority) {
    throw new EchoMQOptionError('priority', `must be a whole number from 0 (none) to ${DEFAULTS.maxPriority}, got ${describe(priority)}`);
  }
  if (typeof lifo !== 'boolean') throw new EchoMQOptionError('lifo', `must be true or false, got ${describe(lifo)}`);
  await context.control.changePriority(jobId, priority, lifo);
  return priority;
}

/** A delayed job becomes ready now. */
export async function promoteJob(context: JobContext, jobId: string): Promise<void> {
  await context.control.promote(jobId);
  context.wake?.();
}

/**
 * The handler of an active job sends it to delayed until `timestamp` (now when earlier) under its
 * lock `token`; returns the delay from now. The run's worker, told through RunOwnership, lets the
 * job go. Refused with EchoMQError -2 (no lock), -6 (another token), -3 (not active), -1 (gone).
 */
export async function moveJobToDelayed(job: JobRun, context: JobContext, timestamp: unknown, token: unknown): Promise<number> {
  if (!Number.isSafeInteger(timestamp) || (timestamp as number) < 0) {
    throw new EchoMQOptionError('timestamp', `must be a time in ms since the epoch (a whole number >= 0), got ${describe(timestamp)}`);
  }
  if (typeof token !== 'string' || token.length === 0) {
    throw new EchoMQOptionError('token', `must be the lock token the handler was given ({ token } of its second argument), got ${describe(token)}`);
  }
  const dueAt = timestamp as number;
  const now = Date.now();
  // Looked up only now: a job that never moves itself costs its worker nothing per run.
  const ours = context.ownRun?.(job.id, token);
  ours?.leaving();
  try {
    await context.control.moveToDelayed(job.id, token, dueAt, now);
  } catch (error) {
    if (!(error instanceof EchoMQError && error.code === -2 && (await landedEarlier(job, context, Math.max(dueAt, now))))) throw error;
  }
  ours?.left();
  context.wake?.();
  return Math.max(0, dueAt - now);
}

/**
 * A -2 may be this very call answered a second time: its reply was lost with the connection and
 * ioredis sent it again, after the first had released the lock. It landed if the job is delayed
 * at the due time this call wrote and no pickup came since (`ats`, the fencing number, unchanged).
 */
async function landedEarlier(job: JobRun, context: JobContext, dueAt: number): Promise<boolean> {
  try {
    const replies = (await context.client.pipeline().zscore(context.keys.delayed, job.id).hget(context.keys.job(job.id), 'ats').exec()) ?? [];
    const [[scoreError, score], [atsError, ats]] = replies as Array<[Error | null, string | null]>;
    if (scoreError || atsError) return false;
    return score !== null && Number(score) === dueAt && Number(ats ?? 0) === job.attemptsStarted;
  } catch {
    return false;
  }
}
