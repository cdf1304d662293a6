import type { JobState } from '../../protocol/keys.js';
import type { Job } from '../job/job.js';
import { orderAcrossPartitions, sliceLikeRange } from '../job/partition-order.js';
import type { QueuePart } from '../job/queue-part.js';

/**
 * getJobs' read: the jobs of each state, ranks `start` to `end`, each state in the direction asked
 * (`ascending[i]` for `states[i]`). A plain queue's one part is read as asked; a partitioned
 * queue's parts are each read up to rank `end` (their first end + 1 jobs hold the whole queue's
 * first end + 1), merged in order (orderAcrossPartitions, delayed jobs by their scores), then cut.
 * `present` loads the jobs of some ids of a part that still exist, in order.
 */
export async function listJobs<J extends Job<any, any>>(
  parts: readonly QueuePart[], states: JobState[], start: number, end: number, ascending: boolean[],
  present: (part: QueuePart, ids: string[]) => Promise<J[]>,
): Promise<J[]> {
  if (parts.length === 1) {
    const { ids } = await parts[0].readIds(states, start, end, ascending);
    return present(parts[0], ids.flat());
  }
  const upTo = start < 0 || end < 0 ? -1 : end;
  const dueAt = new Map<J, number | undefined>();
  const delayedAt = states.indexOf('delayed');
  const perPart = await Promise.all(parts.map(async (part) => {
    const read = await part.readIds(states, 0, upTo, ascending);
    const jobs = await Promise.all(read.ids.map((ids) => present(part, ids)));
    if (delayedAt >= 0) for (const job of jobs[delayedAt]) dueAt.set(job, read.dueAt.get(job.id));
    return jobs;
  }));
  return states.flatMap((state, s) => sliceLikeRange(
    orderAcrossPartitions(state, perPart.map((jobs) => jobs[s]), ascending[s], (job) => dueAt.get(job)), start, end));
}
