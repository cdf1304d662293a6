import { NOW, PREFIX, hash, job, k, list, zset } from './_common.mjs';

/** Job `id` finished at `at`, with a log line. */
const done = (id, at) => ({ [k(id)]: job(id, ['finishedOn', at, 'returnvalue', '"ok"']), [k(`${id}:logs`)]: list('a line') });

export default {
  script: 'trimFinished-1.lua',
  about: 'One bounded step of a keep rule on a finished set (docs/protocol.md, "Bounded work"): KEYS the set (completed or failed); ARGV job-key prefix, keep count (-1 none), keep age ms (0 none), now. The oldest jobs over the count, and those finished before now - age, are deleted (at most 1000 a call, each with its logs, lock and flow keys), and taken out of the set. Returns how many jobs are still over the rule (0: it holds).',
  cases: [
    {
      name: 'a count: the oldest over it go with their logs and flow keys; 0, the rule holds',
      before: {
        ...done('1', '1700000001000'), ...done('2', '1700000002000'), ...done('3', '1700000003000'),
        [k('1:processed')]: hash('emq:{children}:c1', '"v"'),
        [k('completed')]: zset('1', '1700000001000', '2', '1700000002000', '3', '1700000003000'),
      },
      keys: [k('completed')],
      argv: [PREFIX, '1', '0', NOW],
    },
    {
      name: 'an age: jobs finished before now - age go; a newer one stays',
      before: {
        ...done('1', '1700000001000'), ...done('2', '1700000099000'),
        [k('failed')]: zset('1', '1700000001000', '2', '1700000099000'),
      },
      keys: [k('failed')],
      argv: [PREFIX, '-1', '60000', NOW],
    },
    {
      name: 'the rule holds already: 0, nothing written',
      before: { ...done('1', '1700000001000'), [k('completed')]: zset('1', '1700000001000') },
      keys: [k('completed')],
      argv: [PREFIX, '5', '0', NOW],
    },
  ],
};
