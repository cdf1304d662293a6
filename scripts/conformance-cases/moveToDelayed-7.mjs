import { MAX_EVENTS, NOW, job, k, list, lock, set, zset } from './_common.mjs';

const KEYS = [k('active'), k('delayed'), k('stalled'), k('marker'), k('events'), k('1'), k('1:lock')];
const running = () => job('1', ['ats', '1', 'processedOn', '1700000090000']);

export default {
  script: 'moveToDelayed-7.lua',
  about: 'job.moveToDelayed: KEYS active, delayed, stalled, marker, events, the job\'s hash, its lock; ARGV jobId, token, now, the due time, events max length. The checks of every script that takes a job out of active, in order and before any write: -1 no job hash, -2 no lock, -6 another token holds it, -3 not in active (nothing changed). Then out of active, the lock DELeted, SREM stalled, atm untouched (no attempt counted), its delay field the due time less now, scored in delayed by the due time (a due time before now is now, delay 0), the marker "1" at the due time, event delayed with the due time. 1 moved.',
  cases: [
    {
      name: 'no job hash: -1, nothing changed',
      before: { [k('1:lock')]: lock(), [k('active')]: list('1') },
      keys: KEYS,
      argv: ['1', 'token-a', NOW, '1700000160000', MAX_EVENTS],
    },
    {
      name: 'no lock (it lapsed): -2, nothing changed',
      before: { [k('1')]: running(), [k('active')]: list('1'), [k('stalled')]: set('1') },
      keys: KEYS,
      argv: ['1', 'token-a', NOW, '1700000160000', MAX_EVENTS],
    },
    {
      name: 'another token holds the lock: -6, nothing changed',
      before: { [k('1')]: running(), [k('1:lock')]: lock('token-b'), [k('active')]: list('1') },
      keys: KEYS,
      argv: ['1', 'token-a', NOW, '1700000160000', MAX_EVENTS],
    },
    {
      name: 'locked but not in active: -3, nothing changed',
      before: { [k('1')]: running(), [k('1:lock')]: lock(), [k('wait')]: list('1') },
      keys: KEYS,
      argv: ['1', 'token-a', NOW, '1700000160000', MAX_EVENTS],
    },
    {
      name: 'the token holds the lock: out of active and stalled, the lock DELeted, delayed until the due time (delay = due - now), the marker at it, event delayed; atm unchanged',
      before: {
        [k('1')]: job('1', ['ats', '2', 'processedOn', '1700000090000', 'atm', '1']),
        [k('1:lock')]: lock(),
        [k('active')]: list('2', '1'),
        [k('stalled')]: set('1', '2'),
        [k('3')]: job('3', [], { delay: '20000' }),
        [k('delayed')]: zset('3', '1700000120000'),
      },
      keys: KEYS,
      argv: ['1', 'token-a', NOW, '1700000160000', MAX_EVENTS],
    },
    {
      name: 'a due time before now: due now, delay 0',
      before: { [k('1')]: running(), [k('1:lock')]: lock(), [k('active')]: list('1') },
      keys: KEYS,
      argv: ['1', 'token-a', NOW, '1700000050000', MAX_EVENTS],
    },
  ],
};
