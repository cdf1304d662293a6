import { EchoMQOptionError } from '../../protocol/errors.js';
import type { JobState, Keys } from '../../protocol/keys.js';
import { describe } from '../../protocol/names.js';
import type { RedisClient } from '../../protocol/script.js';

export type JobStateOrUnknown = JobState | 'unknown';

/**
 * A job's state as `job.getState()` answers it: BullMQ's names, `waiting` for a job in `wait` or
 * `paused` (as BullMQ's getState answers for both lists), `unknown` when no state holds it. The
 * keys keep the protocol's names; only the answer is BullMQ's (docs/job-control.md).
 */
export type JobStatus = Exclude<JobState, 'wait' | 'paused'> | 'waiting' | 'unknown';

/** A state as a caller may name it: ours, or BullMQ's `waiting` for `wait`. */
export type JobStateName = JobState | 'waiting';

/** Every state whose key holds job ids. */
export const JOB_STATES: readonly JobState[] = ['wait', 'paused', 'prioritized', 'active', 'delayed', 'completed', 'failed', 'waiting-children'];

/** BullMQ's names for our states: what users coming from it type. */
const ALIASES: Readonly<Record<string, JobState>> = { waiting: 'wait' };

/**
 * The state a caller named, as its key calls it: `waiting` is `wait`. Anything else is refused with
 * an EchoMQOptionError naming `field`, before anything is sent (an unknown state would silently
 * read an empty key, and a key name that is not a state answers WRONGTYPE).
 */
export function parseJobState(state: unknown, field = 'state'): JobState {
  if (typeof state === 'string') {
    if ((JOB_STATES as readonly string[]).includes(state)) return state as JobState;
    if (Object.hasOwn(ALIASES, state)) return ALIASES[state];
  }
  throw new EchoMQOptionError(field, `is ${describe(state)}; use one of ${JOB_STATES.join(', ')} (or waiting, for wait)`);
}

/** parseJobState over one state or a list; the field names the position of a bad one. */
export function parseJobStates(states: unknown, field = 'states'): JobState[] {
  if (!Array.isArray(states)) return [parseJobState(states, field)];
  return states.map((state, i) => parseJobState(state, `${field}[${i}]`));
}

const ZSET_STATES = ['completed', 'failed', 'delayed', 'prioritized', 'waiting-children'] as const;
const LIST_STATES = ['active', 'wait', 'paused'] as const;

/** Where a job is, from one pipelined round trip; 'unknown' when no state holds it. */
export async function getJobState(client: RedisClient, keys: Keys, jobId: string): Promise<JobStateOrUnknown> {
  const pipeline = client.pipeline();
  for (const state of ZSET_STATES) pipeline.zscore(keys.state(state), jobId);
  for (const state of LIST_STATES) pipeline.lpos(keys.state(state), jobId);
  const replies = (await pipeline.exec()) ?? [];
  const states = [...ZSET_STATES, ...LIST_STATES];
  for (let i = 0; i < states.length; i++) {
    const [error, reply] = replies[i];
    if (error) throw error;
    if (reply !== null) return states[i];
  }
  return 'unknown';
}

/** getJobState under BullMQ's names (JobStatus): `waiting` for wait and paused. */
export async function getJobStatus(client: RedisClient, keys: Keys, jobId: string): Promise<JobStatus> {
  const state = await getJobState(client, keys, jobId);
  return state === 'wait' || state === 'paused' ? 'waiting' : state;
}
