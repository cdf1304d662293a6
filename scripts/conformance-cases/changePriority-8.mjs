import { job, k, list, lock, hash, str, zset } from './_common.mjs';

const KEYS = [k('wait'), k('paused'), k('meta'), k('prioritized'), k('pc'), k('marker'), k('delayed'), k('1')];

export default {
  script: 'changePriority-8.lua',
  about: 'job.changePriority: KEYS wait, paused, meta, prioritized, pc, marker, delayed, the job\'s hash; ARGV jobId, priority, lifo ("1"/"0"). The priority field is written in any state. A job in prioritized, wait or paused (looked for in that order; not in wait or paused when it is delayed or its lock exists) is taken out and placed as an add places one (pushReady): priority 0 to wait (paused while paused), FIFO (LPUSH) or with lifo to be taken next (RPUSH); a priority to prioritized, scored priority * 2^32 + INCR pc (lifo does not apply); the marker unless paused. 1, or -1 when there is no job (nothing written). No event.',
  cases: [
    {
      name: 'no job hash: -1, nothing written',
      before: { [k('wait')]: list('2') },
      keys: KEYS,
      argv: ['1', '5', '0'],
    },
    {
      name: 'a waiting job given a priority: out of wait, into prioritized after the jobs of that priority (pc), the marker',
      before: {
        [k('1')]: job('1'),
        [k('2')]: job('2'),
        [k('3')]: job('3', [], { priority: '5' }),
        [k('wait')]: list('2', '1'),
        [k('prioritized')]: zset('3', '21474836483'),
        [k('pc')]: str('3'),
      },
      keys: KEYS,
      argv: ['1', '5', '0'],
    },
    {
      name: 'a prioritized job given priority 0 with lifo: out of prioritized, to the right end of wait (taken next), the marker',
      before: {
        [k('1')]: job('1', [], { priority: '5' }),
        [k('2')]: job('2'),
        [k('wait')]: list('2'),
        [k('prioritized')]: zset('1', '21474836481'),
        [k('pc')]: str('1'),
      },
      keys: KEYS,
      argv: ['1', '0', '1'],
    },
    {
      name: 'a prioritized job given priority 0 without lifo: to the left end of wait (FIFO)',
      before: {
        [k('1')]: job('1', [], { priority: '5' }),
        [k('2')]: job('2'),
        [k('wait')]: list('2'),
        [k('prioritized')]: zset('1', '21474836481'),
        [k('pc')]: str('1'),
      },
      keys: KEYS,
      argv: ['1', '0', '0'],
    },
    {
      name: 'a prioritized job given another priority: scored again with the next pc; lifo does not apply to a priority',
      before: {
        [k('1')]: job('1', [], { priority: '5' }),
        [k('2')]: job('2', [], { priority: '1' }),
        [k('prioritized')]: zset('2', '4294967298', '1', '21474836481'),
        [k('pc')]: str('2'),
      },
      keys: KEYS,
      argv: ['1', '1', '1'],
    },
    {
      name: 'paused: a job of paused given priority 0 with lifo goes to the right end of paused, no marker',
      before: {
        [k('1')]: job('1'),
        [k('2')]: job('2'),
        [k('paused')]: list('1', '2'),
        [k('meta')]: hash('paused', '1'),
      },
      keys: KEYS,
      argv: ['1', '0', '1'],
    },
    {
      name: 'paused: a job of paused given a priority goes to prioritized, no marker',
      before: {
        [k('1')]: job('1'),
        [k('paused')]: list('1'),
        [k('meta')]: hash('paused', '1'),
      },
      keys: KEYS,
      argv: ['1', '3', '0'],
    },
    {
      name: 'a delayed job: only the field is written, it stays delayed',
      before: {
        [k('1')]: job('1', [], { delay: '60000' }),
        [k('delayed')]: zset('1', '1700000060000'),
      },
      keys: KEYS,
      argv: ['1', '2', '0'],
    },
    {
      name: 'a running job (its lock): only the field is written, it stays in active',
      before: {
        [k('1')]: job('1', ['ats', '1', 'processedOn', '1700000090000']),
        [k('1:lock')]: lock(),
        [k('active')]: list('1'),
      },
      keys: KEYS,
      argv: ['1', '2', '0'],
    },
    {
      name: 'a completed job: only the field is written',
      before: {
        [k('1')]: job('1', ['ats', '1', 'processedOn', '1700000090000', 'atm', '1', 'finishedOn', '1700000095000', 'returnvalue', '"ok"']),
        [k('completed')]: zset('1', '1700000095000'),
      },
      keys: KEYS,
      argv: ['1', '2', '0'],
    },
  ],
};
