import type { JobState, Keys } from '../protocol/keys.js';
import type { RedisClient } from '../protocol/script.js';

export type JobStateOrUnknown = JobState | 'unknown';

const ZSET_STATES = ['completed', 'failed', 'delayed', 'prioritized'] as const;
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
