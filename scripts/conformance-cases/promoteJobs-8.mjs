import { MAX_EVENTS, PREFIX, job, k, list, hash, zset } from './_common.mjs';

const KEYS = [k('delayed'), k('wait'), k('paused'), k('meta'), k('prioritized'), k('pc'), k('marker'), k('events')];

export default {
  script: 'promoteJobs-8.lua',
  about: 'One batch of queue.promoteJobs: KEYS delayed, wait, paused, meta, prioritized, pc, marker, events; ARGV job-key prefix, count, events max length. The first count ids of delayed by due time (due or not) are taken out (ZREMRANGEBYRANK) and each made ready as promote-9 makes one: delay 0, placed with its stored priority, FIFO, in paused while paused, event waiting (prev delayed); the marker once, when a job became ready and the queue is not paused. An id without a hash is only taken out. Returns how many ids it took out (fewer than count: delayed is empty).',
  cases: [
    {
      name: 'delayed empty: 0, nothing written',
      before: { [k('1')]: job('1'), [k('wait')]: list('1') },
      keys: KEYS,
      argv: [PREFIX, '1000', MAX_EVENTS],
    },
    {
      name: 'count 2 of three: the two first due (one not due yet) made ready in order, one with a priority; the marker once; the third stays',
      before: {
        [k('1')]: job('1', [], { delay: '5000' }),
        [k('2')]: job('2', [], { delay: '200000', priority: '2' }),
        [k('3')]: job('3', [], { delay: '300000' }),
        [k('delayed')]: zset('1', '1700000005000', '2', '1700000200000', '3', '1700000300000'),
      },
      keys: KEYS,
      argv: [PREFIX, '2', MAX_EVENTS],
    },
    {
      name: 'count over the set: all taken, an id without a hash only taken out (counted, no event)',
      before: {
        [k('1')]: job('1', [], { delay: '5000' }),
        [k('3')]: job('3', [], { delay: '300000' }),
        [k('delayed')]: zset('1', '1700000005000', '2', '1700000200000', '3', '1700000300000'),
      },
      keys: KEYS,
      argv: [PREFIX, '1000', MAX_EVENTS],
    },
    {
      name: 'only ids without a hash: taken out, no marker',
      before: { [k('delayed')]: zset('8', '1700000005000', '9', '1700000006000') },
      keys: KEYS,
      argv: [PREFIX, '1000', MAX_EVENTS],
    },
    {
      name: 'paused: the jobs go to paused, no marker',
      before: {
        [k('1')]: job('1', [], { delay: '5000' }),
        [k('2')]: job('2', [], { delay: '200000' }),
        [k('delayed')]: zset('1', '1700000005000', '2', '1700000200000'),
        [k('meta')]: hash('paused', '1'),
      },
      keys: KEYS,
      argv: [PREFIX, '1000', MAX_EVENTS],
    },
  ],
};
