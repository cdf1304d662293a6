import { ADDED, PREFIX, hash, job, k, list, set, str, zset } from './_common.mjs';

const KEYS = [k('wait'), k('paused'), k('active'), k('prioritized'), k('delayed'), k('completed'), k('failed'), k('waiting-children')];

export default {
  script: 'removeOrphanedJobs-8.lua',
  about: 'One batch of queue.removeOrphanedJobs (docs/protocol.md): KEYS wait, paused, active, prioritized, delayed, completed, failed, waiting-children; ARGV job-key prefix, then candidate ids. A candidate whose key is a job hash (data and timestamp), without a lock, held by none of the eight structures (ZSCORE; LPOS within 1,000 entries from each end of a list of at most 2,000) is deleted with its logs, lock, flow keys and a simple-mode deduplication key naming it. Returns how many were deleted.',
  cases: [
    {
      name: 'an orphan goes with its logs, flow keys and deduplication key; jobs in wait, delayed and completed, a locked hash and a scheduler hash stay: 1',
      before: {
        [k('o')]: job('o', ['deid', 'house']), [k('o:logs')]: list('a line'), [k('o:processed')]: hash('emq:{children}:c1', '"v"'),
        [k('de:house')]: str('o'),
        [k('w')]: job('w'), [k('wait')]: list('w'),
        [k('d')]: job('d'), [k('delayed')]: zset('d', '1700000200000'),
        [k('c')]: job('c', ['finishedOn', ADDED]), [k('completed')]: zset('c', ADDED),
        [k('l')]: job('l'), [k('l:lock')]: str('token', 30000),
        [k('repeat:tick')]: hash('repeat', '{"every":1000}', 'gen', '1'),
        [k('stalled')]: set('x'),
      },
      keys: KEYS,
      argv: [PREFIX, 'o', 'w', 'd', 'c', 'l', 'repeat:tick', 'missing'],
    },
    {
      name: 'nothing orphaned: 0, nothing written',
      before: { [k('w')]: job('w'), [k('paused')]: list('w'), [k('p')]: job('p'), [k('waiting-children')]: zset('p', ADDED) },
      keys: KEYS,
      argv: [PREFIX, 'w', 'p'],
    },
  ],
};
