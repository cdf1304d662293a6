import type { JobState } from '../../protocol/keys.js';
import type { Job } from './job.js';

/**
 * The order getJobs answers a state in when asked for none: ascending (next to run first) for the
 * states that will run, descending (newest finished first) for completed and failed.
 */
export function ascendingByDefault(state: JobState): boolean {
  return state !== 'completed' && state !== 'failed';
}

/**
 * One state's jobs of every partition as one list. Each partition's list is in its own order
 * (ascending: the order its jobs will run, oldest finished first; or descending, the reverse), and
 * the merge keeps it: it takes, step by step, the head that comes first by the jobs' own fields
 * (add time, priority, due time, finish time). A retried job, back at the end of its partition's
 * wait with its old add time, stays behind the jobs ahead of it there. Since only heads are
 * compared, the first n of the merge depend only on the first n of each list: reading each
 * partition's first end + 1 jobs gives the right page. A delayed job's due time is `dueAt`'s (its
 * score in delayed), else its add time plus its delay, which a changeDelay or a retry's backoff
 * makes wrong.
 */
export function orderAcrossPartitions<J extends Job<any, any>>(
  state: JobState, perPartition: J[][], ascending = ascendingByDefault(state), dueAt?: (job: J) => number | undefined,
): J[] {
  const key = state === 'delayed' && dueAt ? (job: J) => dueAt(job) ?? SORT_KEYS.delayed(job) : SORT_KEYS[state as Exclude<JobState, 'prioritized'>];
  const compare = state === 'prioritized'
    ? (a: J, b: J) => a.priority - b.priority || a.timestamp - b.timestamp
    : (a: J, b: J) => key(a) - key(b);
  const before = ascending ? compare : (a: J, b: J) => compare(b, a);
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

/** Ascending: lower sorts first. */
const SORT_KEYS: Record<Exclude<JobState, 'prioritized'>, (job: Job<any, any>) => number> = {
  // Ready and running jobs: the oldest add first, as each partition's list runs.
  wait: (job) => job.timestamp,
  paused: (job) => job.timestamp,
  active: (job) => job.processedOn ?? job.timestamp,
  // The first due first.
  delayed: (job) => job.timestamp + job.delay,
  // The oldest finished first.
  completed: (job) => job.finishedOn ?? 0,
  failed: (job) => job.finishedOn ?? 0,
  // Parents: the oldest add first (each partition's zset is scored by the add).
  'waiting-children': (job) => job.timestamp,
};

/** `list[start..end]` inclusive, negative bounds counting from the end, as LRANGE reads them. */
export function sliceLikeRange<T>(list: T[], start: number, end: number): T[] {
  const from = start < 0 ? Math.max(0, list.length + start) : start;
  const to = end < 0 ? list.length + end : end;
  return from > to ? [] : list.slice(from, to + 1);
}
