import { EchoMQOptionError } from './errors.js';
import { describe, MAX_JOB_ID_LENGTH } from './names.js';

/**
 * The ids of a job scheduler's jobs: `repeat:<schedulerId>:<slot ms>`, one per slot, so a slot can
 * never hold two jobs. The `:` keeps them apart from every custom id (custom ids hold none).
 */
const SCHEDULER_JOB_ID = /^repeat:([^:]+):(\d+)$/;

/** The longest scheduler id: its job ids (`repeat:<id>:<13 digits>`) stay within a job id's length. */
export const MAX_SCHEDULER_ID_LENGTH = MAX_JOB_ID_LENGTH - 30;

/** A scheduler id is a non-empty string without `:` (it is part of its jobs' ids and of its hash's key). */
export function assertSchedulerId(id: unknown, field = 'jobSchedulerId'): asserts id is string {
  if (typeof id !== 'string' || id.length === 0) throw new EchoMQOptionError(field, `must be a non-empty string, got ${describe(id)}`);
  if (id.length > MAX_SCHEDULER_ID_LENGTH) {
    throw new EchoMQOptionError(field, `is ${id.length} characters long; at most ${MAX_SCHEDULER_ID_LENGTH} are allowed`);
  }
  if (id.includes(':')) throw new EchoMQOptionError(field, `"${id}" holds ":", which separates the parts of its jobs' ids`);
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
