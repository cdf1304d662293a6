import { MAX_EVENTS, job, k, list, hash, str, zset } from './_common.mjs';

const KEYS = [k('delayed'), k('wait'), k('paused'), k('meta'), k('prioritized'), k('pc'), k('marker'), k('events'), k('1')];

export default {
  script: 'promote-9.lua',
  about: 'job.promote: KEYS delayed, wait, paused, meta, prioritized, pc, marker, events, the job\'s hash; ARGV jobId, events max length. A delayed job becomes ready now: out of delayed, its delay field 0, placed by pushReady with its stored priority, FIFO (wait, or paused while paused; prioritized with a priority), the marker unless paused, event waiting (prev delayed). -1 no job, -3 not in delayed: nothing written.',
  cases: [
    {
      name: 'no job hash: -1, nothing written',
      before: { [k('delayed')]: zset('2', '1700000160000') },
      keys: KEYS,
      argv: ['1', MAX_EVENTS],
    },
    {
      name: 'a waiting job (not delayed): -3, nothing written',
      before: { [k('1')]: job('1'), [k('wait')]: list('1') },
      keys: KEYS,
      argv: ['1', MAX_EVENTS],
    },
    {
      name: 'a delayed job: to the left end of wait, delay 0, the marker, event waiting (prev delayed); other delayed jobs stay',
      before: {
        [k('1')]: job('1', [], { delay: '60000' }),
        [k('2')]: job('2', [], { delay: '30000' }),
        [k('3')]: job('3'),
        [k('delayed')]: zset('2', '1700000030000', '1', '1700000060000'),
        [k('wait')]: list('3'),
      },
      keys: KEYS,
      argv: ['1', MAX_EVENTS],
    },
    {
      name: 'a delayed job with a priority: to prioritized (priority * 2^32 + INCR pc)',
      before: {
        [k('1')]: job('1', [], { delay: '60000', priority: '3' }),
        [k('delayed')]: zset('1', '1700000060000'),
        [k('pc')]: str('7'),
      },
      keys: KEYS,
      argv: ['1', MAX_EVENTS],
    },
    {
      name: 'paused: a delayed job goes to paused, no marker',
      before: {
        [k('1')]: job('1', [], { delay: '60000' }),
        [k('delayed')]: zset('1', '1700000060000'),
        [k('meta')]: hash('paused', '1'),
      },
      keys: KEYS,
      argv: ['1', MAX_EVENTS],
    },
  ],
};
