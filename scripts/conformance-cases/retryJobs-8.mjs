import { MAX_EVENTS, PREFIX, job, k, list, hash, zset } from './_common.mjs';

const failedKeys = [k('failed'), k('wait'), k('paused'), k('meta'), k('prioritized'), k('pc'), k('marker'), k('events')];
const completedKeys = [k('completed'), ...failedKeys.slice(1)];

const failedJob = (id, finishedOn, opts, extra = []) => job(id, ['ats', '2', 'processedOn', String(Number(finishedOn) - 1000), 'atm', '2', 'stc', '1',
  'finishedOn', finishedOn, 'failedReason', 'boom', 'stacktrace', '["Error: boom"]', ...extra], opts);
const completedJob = (id, finishedOn) => job(id, ['ats', '1', 'processedOn', String(Number(finishedOn) - 1000), 'atm', '1',
  'finishedOn', finishedOn, 'returnvalue', '"ok"']);

export default {
  script: 'retryJobs-8.lua',
  about: 'One batch of queue.retryJobs: KEYS the finished set (failed or completed), wait, paused, meta, prioritized, pc, marker, events; ARGV job-key prefix, count, the cut-off (finishedOn, inclusive), events max length. The first count ids scored at or before the cut-off leave the set; each job as reprocessJob-9 sends one back: finishedOn, processedOn, failedReason, stacktrace, returnvalue, cxl and cfr removed, atm and stc 0, ats kept, placed with its stored priority, FIFO, in paused while paused, event waiting (prev retried); the marker once, when a job became ready and the queue is not paused. An id without a hash is only taken out. Returns how many ids it took out.',
  cases: [
    {
      name: 'nothing finished at or before the cut-off: 0, nothing written',
      before: { [k('1')]: failedJob('1', '1700000095000'), [k('failed')]: zset('1', '1700000095000') },
      keys: failedKeys,
      argv: [PREFIX, '1000', '1700000090000', MAX_EVENTS],
    },
    {
      name: 'failed jobs up to the cut-off (inclusive) go back, the first finished first: fields cleared, atm and stc 0, ats kept, a cancel\'s mark and a failed child\'s mark (cfr) removed, one with a priority to prioritized; the marker once; a later one stays',
      before: {
        [k('1')]: failedJob('1', '1700000080000'),
        [k('2')]: failedJob('2', '1700000090000', { priority: '4' }, ['cxl', 'no longer needed', 'cfr', 'child emq:{kids}:7 failed: boom']),
        [k('3')]: failedJob('3', '1700000095000'),
        [k('9')]: job('9'),
        [k('wait')]: list('9'),
        [k('failed')]: zset('1', '1700000080000', '2', '1700000090000', '3', '1700000095000'),
      },
      keys: failedKeys,
      argv: [PREFIX, '1000', '1700000090000', MAX_EVENTS],
    },
    {
      name: 'count 1: only the first finished is taken',
      before: {
        [k('1')]: failedJob('1', '1700000080000'),
        [k('2')]: failedJob('2', '1700000090000'),
        [k('failed')]: zset('1', '1700000080000', '2', '1700000090000'),
      },
      keys: failedKeys,
      argv: [PREFIX, '1', '1700000100000', MAX_EVENTS],
    },
    {
      name: 'completed jobs: returnvalue removed; an id without a hash only taken out (counted, no event)',
      before: {
        [k('1')]: completedJob('1', '1700000080000'),
        [k('completed')]: zset('1', '1700000080000', '2', '1700000085000'),
      },
      keys: completedKeys,
      argv: [PREFIX, '1000', '1700000100000', MAX_EVENTS],
    },
    {
      name: 'paused: the jobs go to paused, no marker',
      before: {
        [k('1')]: failedJob('1', '1700000080000'),
        [k('failed')]: zset('1', '1700000080000'),
        [k('meta')]: hash('paused', '1'),
      },
      keys: failedKeys,
      argv: [PREFIX, '1000', '1700000100000', MAX_EVENTS],
    },
  ],
};
