import type { JobState } from '../protocol/keys.js';
import type { Job } from './job.js';

/**
 * One state's jobs of every partition as one list, in the order a reader of the whole queue
 * expects: partitions have no order between them, so it is taken from the jobs themselves.
 * Each partition's list is already in its own order, which a stable sort keeps for ties.
 */
export function orderAcrossPartitions<J extends Job<any, any>>(state: JobState, perPartition: J[][]): J[] {
  const all = perPartition.flat();
  // Prioritized jobs sort by priority first: two keys, since priority * 2^42 + timestamp would
  // pass 2^53 and lose the timestamp's low digits.
  if (state === 'prioritized') return all.sort((a, b) => a.priority - b.priority || a.timestamp - b.timestamp);
  const key = SORT_KEYS[state];
  return all.sort((a, b) => key(a) - key(b));
}

/** Lower sorts first. */
const SORT_KEYS: Record<Exclude<JobState, 'prioritized'>, (job: Job<any, any>) => number> = {
  // Ready and running jobs: the oldest add first, as each partition's list runs.
  wait: (job) => job.timestamp,
  paused: (job) => job.timestamp,
  active: (job) => job.processedOn ?? job.timestamp,
  // The first due first.
  delayed: (job) => job.timestamp + job.delay,
  // Newest finished first.
  completed: (job) => -(job.finishedOn ?? 0),
  failed: (job) => -(job.finishedOn ?? 0),
};

/** `list[start..end]` inclusive, negative bounds counting from the end, as LRANGE reads them. */
export function sliceLikeRange<T>(list: T[], start: number, end: number): T[] {
  const from = start < 0 ? Math.max(0, list.length + start) : start;
  const to = end < 0 ? list.length + end : end;
  return from > to ? [] : list.slice(from, to + 1);
}
