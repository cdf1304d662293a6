import { EchoMQError } from '../../protocol/errors.js';
import type { JobControlScripts } from '../../protocol/job-control-scripts.js';
import type { RedisClient } from '../../protocol/script.js';
import type { Keys } from '../../protocol/keys.js';

/**
 * The fixed stalled sweep (moveStalledJobsToWait-8) puts every job it gives back at the far end of
 * wait (LPUSH), whatever its priority: a prioritized job that stalled would lose its place among
 * the prioritized ones and run after all of them. Here the jobs it moved back that have a
 * priority are placed again by it (changePriority-8 with the priority and lifo they hold: a job in
 * wait or paused goes back to prioritized). One HMGET a job moved, only after a sweep that moved
 * any; a job a worker took meanwhile is left as it is (changePriority-8 places only a ready job),
 * and one removed meanwhile (a cancel, a removal: -1) is nothing to place.
 */
export async function placeStalledByPriority(client: RedisClient, keys: Keys, control: Pick<JobControlScripts, 'changePriority'>, jobIds: string[]): Promise<void> {
  if (jobIds.length === 0) return;
  const replies = (await client.pipeline(jobIds.map((id) => ['hmget', keys.job(id), 'priority', 'lifo'])).exec()) ?? [];
  await Promise.all(jobIds.map(async (jobId, i) => {
    const [error, fields] = replies[i] ?? [];
    if (error) throw error;
    const [priority, lifo] = (fields ?? []) as Array<string | null>;
    const value = Number(priority ?? 0);
    if (value > 0) await control.changePriority(jobId, value, lifo === '1').catch(ignoreGone);
  }));
}

/** A job removed between the sweep and its placing (EchoMQError -1): nothing to do. */
function ignoreGone(error: unknown): void {
  if (error instanceof EchoMQError && error.code === -1) return;
  throw error;
}
