import { MAX_EVENTS, NOW, job, k, list, zset } from './_common.mjs';

const KEYS = [k('delayed'), k('marker'), k('events'), k('1')];

export default {
  script: 'changeDelay-4.lua',
  about: 'job.changeDelay: KEYS delayed, marker, events, the job\'s hash; ARGV jobId, now, delay ms, events max length. A delayed job becomes due now + delay: its score, its delay field (the delay given; timestamp stays the add\'s), the marker "1" at the new due time, event delayed with the due time. -1 no job, -3 not in delayed: nothing written.',
  cases: [
    {
      name: 'no job hash: -1, nothing written',
      before: { [k('delayed')]: zset('2', '1700000160000') },
      keys: KEYS,
      argv: ['1', NOW, '30000', MAX_EVENTS],
    },
    {
      name: 'a waiting job (not delayed): -3, nothing written',
      before: { [k('1')]: job('1'), [k('wait')]: list('1') },
      keys: KEYS,
      argv: ['1', NOW, '30000', MAX_EVENTS],
    },
    {
      name: 'a delayed job made later: due now + delay, its delay field the delay, the marker at the due time, event delayed; other delayed jobs stay',
      before: {
        [k('1')]: job('1', [], { delay: '5000' }),
        [k('2')]: job('2', [], { delay: '60000' }),
        [k('delayed')]: zset('1', '1700000005000', '2', '1700000060000'),
      },
      keys: KEYS,
      argv: ['1', NOW, '30000', MAX_EVENTS],
    },
    {
      name: 'delay 0: due now (the next pickup promotes it); a marker "1" set for a later time moves to now',
      before: {
        [k('1')]: job('1', [], { delay: '90000' }),
        [k('delayed')]: zset('1', '1700000090000'),
        [k('marker')]: zset('1', '1700000090000'),
      },
      keys: KEYS,
      argv: ['1', NOW, '0', MAX_EVENTS],
    },
  ],
};
