import { job, k, list, lock, zset } from './_common.mjs';

const KEYS = [k('1')];
const DATA = '{"n":"1","step":2}';

export default {
  script: 'updateData-1.lua',
  about: 'job.updateData: KEYS the job\'s hash; ARGV the data (JSON). The data field is replaced in any state (a running job\'s handler keeps its progress in it); nothing else is written, no event. 1, or -1 when there is no job (nothing written).',
  cases: [
    {
      name: 'no job hash: -1, nothing written',
      before: { [k('wait')]: list('2') },
      keys: KEYS,
      argv: [DATA],
    },
    {
      name: 'a waiting job: its data replaced, nothing else written',
      before: { [k('1')]: job('1'), [k('wait')]: list('1') },
      keys: KEYS,
      argv: [DATA],
    },
    {
      name: 'a running job: its data replaced, its lock and place untouched',
      before: { [k('1')]: job('1', ['ats', '1', 'processedOn', '1700000090000']), [k('1:lock')]: lock(), [k('active')]: list('1') },
      keys: KEYS,
      argv: [DATA],
    },
    {
      name: 'a completed job: its data replaced too',
      before: {
        [k('1')]: job('1', ['ats', '1', 'processedOn', '1700000090000', 'atm', '1', 'finishedOn', '1700000095000', 'returnvalue', '"ok"']),
        [k('completed')]: zset('1', '1700000095000'),
      },
      keys: KEYS,
      argv: [DATA],
    },
  ],
};
