import { EchoMQOptionError } from './errors.js';
import { describe, MAX_JOB_ID_LENGTH } from './names.js';

/**
 * The ids of a job scheduler's jobs: `repeat:<schedulerId>:<slot ms>`, one per slot, so a slot can
 * never hold two jobs. The `:` keeps them apart from every custom id (custom ids hold none). The
 * slot is the last part: a scheduler id may hold `:` (`tenant:region:task`, as people write them
 * in BullMQ), but no part after one is all digits, so no scheduler's hash key
 * (`P:{Q}:repeat:<id>`) is ever another scheduler's job key (`P:{Q}:repeat:<id>:<slot>`) or one of
 * that job's keys (`...:<slot>:lock`, `...:<slot>:logs`).
 */
const SCHEDULER_JOB_ID = /^repeat:(.+):(\d+)$/;

/** The longest scheduler id: its job ids (`repeat:<id>:<13 digits>`) stay within a job id's length. */
export const MAX_SCHEDULER_ID_LENGTH = MAX_JOB_ID_LENGTH - 30;

/** A scheduler id is a non-empty string; a part after a `:` is never all digits (see SCHEDULER_JOB_ID). */
export function assertSchedulerId(id: unknown, field = 'jobSchedulerId'): asserts id is string {
  if (typeof id !== 'string' || id.length === 0) throw new EchoMQOptionError(field, `must be a non-empty string, got ${describe(id)}`);
  if (id.length > MAX_SCHEDULER_ID_LENGTH) {
    throw new EchoMQOptionError(field, `is ${id.length} characters long; at most ${MAX_SCHEDULER_ID_LENGTH} are allowed`);
  }
  if (id.split(':').slice(1).some((part) => /^\d*$/.test(part))) {
    throw new EchoMQOptionError(field, `"${id}" has a part after ":" that is empty or all digits, which its jobs' ids (repeat:<id>:<slot>) would confuse with a slot`);
  }
}

/** The id of a scheduler's job for one slot. */
export function schedulerJobId(schedulerId: string, slot: number): string {
  return `repeat:${schedulerId}:${slot}`;
}

/** The scheduler and slot a job id names, or undefined when it is not a scheduler's job id. */
export function parseSchedulerJobId(jobId: string): { schedulerId: string; slot: number } | undefined {
  const match = SCHEDULER_JOB_ID.exec(jobId);
  return match ? { schedulerId: match[1], slot: Number(match[2]) } : undefined;
}
