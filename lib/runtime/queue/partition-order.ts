import type { JobState } from '../../protocol/keys.js';
import type { Job } from './job.js';

/**
 * One state's jobs of every partition as one list. Each partition's list is in its own order (the
 * order its jobs will run, or newest finished first), and the merge keeps it: it takes, step by
 * step, the head that comes first by the jobs' own fields (add time, priority, due time, finish
 * time). A retried job, back at the end of its partition's wait with its old add time, stays behind
 * the jobs ahead of it there. Since only heads are compared, the first n of the merge depend only
 * on the first n of each list: reading each partition's first end + 1 jobs gives the right page.
 */
export function orderAcrossPartitions<J extends Job<any, any>>(state: JobState, perPartition: J[][]): J[] {
  const before = state === 'prioritized'
    ? (a: J, b: J) => a.priority - b.priority || a.timestamp - b.timestamp
    : (a: J, b: J) => SORT_KEYS[state as Exclude<JobState, 'prioritized'>](a) - SORT_KEYS[state as Exclude<JobState, 'prioritized'>](b);
  const heads = perPartition.map(() => 0);
  const merged: J[] = [];
  for (;;) {
    let pick = -1;
    perPartition.forEach((list, p) => {
      if (heads[p] < list.length && (pick < 0 || before(list[heads[p]], perPartition[pick][heads[pick]]) < 0)) pick = p;
    });
    if (pick < 0) return merged;
    merged.push(perPartition[pick][heads[pick]++]);
  }
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
