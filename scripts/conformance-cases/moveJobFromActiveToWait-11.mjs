import { MAX_EVENTS, job, k, list, lock, hash, set, str, zset } from './_common.mjs';

const KEYS = [k('active'), k('wait'), k('paused'), k('meta'), k('prioritized'), k('pc'), k('marker'), k('events'), k('stalled'), k('1'), k('1:lock')];
const running = (opts) => job('1', ['ats', '2', 'processedOn', '1700000090000', 'atm', '1'], opts);

export default {
  script: 'moveJobFromActiveToWait-11.lua',
  about: 'A job its handler gave back for a rate limit (RateLimitError): KEYS active, wait, paused, meta, prioritized, pc, marker, events, stalled, the job\'s hash, its lock; ARGV jobId, token, events max length. The checks of every script that takes a job out of active, in order and before any write: -1 no job hash, -2 no lock, -6 another token holds it, -3 not in active (nothing changed). Then out of active, the lock DELeted, SREM stalled, atm and ats untouched (the attempt does not count), and the job placed by pushReady with lifo: the right end of wait (taken next), prioritized with a priority (priority * 2^32 + INCR pc), paused while paused; the marker unless paused; event waiting (prev active). 1 moved.',
  cases: [
    {
      name: 'no job hash: -1, nothing changed',
      before: { [k('1:lock')]: lock(), [k('active')]: list('1') },
      keys: KEYS,
      argv: ['1', 'token-a', MAX_EVENTS],
    },
    {
      name: 'no lock (it lapsed): -2, nothing changed',
      before: { [k('1')]: running(), [k('active')]: list('1') },
      keys: KEYS,
      argv: ['1', 'token-a', MAX_EVENTS],
    },
    {
      name: 'another token holds the lock: -6, nothing changed',
      before: { [k('1')]: running(), [k('1:lock')]: lock('token-b'), [k('active')]: list('1') },
      keys: KEYS,
      argv: ['1', 'token-a', MAX_EVENTS],
    },
    {
      name: 'locked but not in active: -3, nothing changed',
      before: { [k('1')]: running(), [k('1:lock')]: lock(), [k('wait')]: list('1') },
      keys: KEYS,
      argv: ['1', 'token-a', MAX_EVENTS],
    },
    {
      name: 'the token holds the lock: out of active and stalled, the lock DELeted, to the right end of wait (taken next), the marker, event waiting (prev active); atm and ats unchanged',
      before: {
        [k('1')]: running(),
        [k('2')]: job('2'),
        [k('1:lock')]: lock(),
        [k('active')]: list('3', '1'),
        [k('stalled')]: set('1', '3'),
        [k('wait')]: list('2'),
      },
      keys: KEYS,
      argv: ['1', 'token-a', MAX_EVENTS],
    },
    {
      name: 'a job with a priority: back to prioritized after the jobs of its priority',
      before: {
        [k('1')]: running({ priority: '2' }),
        [k('1:lock')]: lock(),
        [k('active')]: list('1'),
        [k('prioritized')]: zset('4', '8589934597'),
        [k('pc')]: str('5'),
      },
      keys: KEYS,
      argv: ['1', 'token-a', MAX_EVENTS],
    },
    {
      name: 'paused: to the right end of paused, no marker',
      before: {
        [k('1')]: running(),
        [k('1:lock')]: lock(),
        [k('active')]: list('1'),
        [k('paused')]: list('2'),
        [k('meta')]: hash('paused', '1'),
      },
      keys: KEYS,
      argv: ['1', 'token-a', MAX_EVENTS],
    },
  ],
};
