import { MAX_EVENTS, NOW, PREFIX, hash, job, k, list, lock, set, zset } from './_common.mjs';

const KEYS = [k('wait'), k('active'), k('prioritized'), k('events'), k('stalled'), k('limiter'), k('delayed'),
  k('paused'), k('meta'), k('pc'), k('marker'), k('completed'), k('failed'), k('notices'), k('notice-data')];
/** ARGV[1..7]: prefix, now, events max length, lockDuration, rate limit max and window, maxActive ("" none). */
const head = (maxActive = '') => [PREFIX, NOW, MAX_EVENTS, '30000', '0', '0', maxActive];
const FINISHED_ON = '1700000099000';
const P = 'emq:{parents}:p';
const PARENT = '{"id":"p","queueKey":"emq:{parents}"}';
/** The nine fields of a job that completes with `value`: keep count, keep age, next token. */
const completes = (id, token, value, { keepCount = '-1', keepAge = '0', next = '' } = {}) => [id, token, 'completed', value, '', keepCount, keepAge, next, FINISHED_ON];
const fails = (id, token, reason, { keepCount = '-1', next = '' } = {}) => [id, token, 'failed', reason, '["Error: boom"]', keepCount, '0', next, FINISHED_ON];
const child = (id, policy = '') => job(id, ['parentKey', P, 'parent', PARENT, 'pfp', policy, 'ats', '1', 'processedOn', '1700000090000'], { name: 'render' });
const parent = (id, extra = []) => job(id, ['fch', '1', ...extra], { name: 'assemble' });

export default {
  script: 'finishFlowJobs-15.lua',
  about: 'The batch form of finishFlowJob-8, with fetch-next (docs/protocol.md, "Flows"): KEYS the eleven pickup keys, completed, failed, notices, notice-data; ARGV prefix, now, events max length, lockDuration, rate limit max and window, maxActive ("" none), then nine fields a job as finishJobs-13\'s (jobId, token, completed or failed, returnvalue or failedReason, stacktrace, keep count, keep age ms, next token or "", finishedOn). Each job has its own lock check (-1, -2, -6, -3: that job left as it was, no notice, no next job) and moveToFinished-14\'s writes; a child (parentKey) leaves its notice [parentKey, outcome, value, policy] scored by its finishedOn (the policy its pfp, or remove for a child that failed with none and is removed at its finish) (one ZADD and one HSET for the call\'s notices); a job removed at its finish (keep 0) takes its flow keys; a count or age rule drops older jobs with their flow keys. Then fetch-next as finishJobs-13 (bounded by maxActive when given). Reply { results (code, next jobId or 0, next hash or {} per job), nextDelayedAt, rateLimitedForMs }.',
  cases: [
    {
      name: 'every refusal leaves its job as it was, writes no notice and takes no next job: -1, -2, -6, -3',
      before: {
        [k('c2')]: child('c2'),
        [k('c3')]: child('c3'),
        [k('c3:lock')]: lock('token-b'),
        [k('c4')]: child('c4'),
        [k('c4:lock')]: lock('token-4'),
        [k('x')]: job('x'),
        [k('active')]: list('c3', 'c2', 'c1'),
        [k('wait')]: list('x'),
      },
      keys: KEYS,
      argv: [...head(), ...completes('c1', 'token-1', '1', { next: 'next-1' }), ...completes('c2', 'token-2', '2', { next: 'next-2' }),
        ...completes('c3', 'token-3', '3', { next: 'next-3' }), ...completes('c4', 'token-4', '4', { next: 'next-4' })],
    },
    {
      name: 'two children finish in one call, one completed with fetch-next, one failed with its policy: both notices (scored by finishedOn), the next job taken',
      before: {
        [k('c1')]: child('c1'),
        [k('c1:lock')]: lock('token-1'),
        [k('c2')]: child('c2', 'fail'),
        [k('c2:lock')]: lock('token-2'),
        [k('x')]: job('x'),
        [k('active')]: list('c2', 'c1'),
        [k('stalled')]: set('c2'),
        [k('wait')]: list('x'),
      },
      keys: KEYS,
      argv: [...head(), ...completes('c1', 'token-1', '{"page":1}', { next: 'next-1' }), ...fails('c2', 'token-2', 'boom')],
    },
    {
      name: 'a job of a flow with no parent (a root parent) completes: no notice',
      before: {
        [k('p')]: parent('p', ['ats', '1', 'processedOn', '1700000090000']),
        [k('p:lock')]: lock('token-1'),
        [k('p:processed')]: hash('emq:{children}:c1', '1'),
        [k('active')]: list('p'),
      },
      keys: KEYS,
      argv: [...head(), ...completes('p', 'token-1', '"pdf"')],
    },
    {
      name: 'a parent that is a child removed at its finish (keep 0): its hash and flow keys go, its notice stays',
      before: {
        [k('m')]: job('m', ['fch', '1', 'parentKey', P, 'parent', PARENT, 'pfp', '', 'ats', '1', 'processedOn', '1700000090000'], { name: 'bundle' }),
        [k('m:lock')]: lock('token-1'),
        [k('m:processed')]: hash('emq:{leaves}:l1', '1'),
        [k('m:ignored')]: hash('emq:{leaves}:l2', 'boom'),
        [k('active')]: list('m'),
      },
      keys: KEYS,
      argv: [...head(), ...completes('m', 'token-1', '"bundle"', { keepCount: '0' })],
    },
    {
      name: 'children failing and removed at their finish (keep 0): with no policy the notice says remove (no failure of the parent\'s), with fail it keeps fail',
      before: {
        [k('c1')]: child('c1'),
        [k('c1:lock')]: lock('token-1'),
        [k('c2')]: child('c2', 'fail'),
        [k('c2:lock')]: lock('token-2'),
        [k('active')]: list('c2', 'c1'),
      },
      keys: KEYS,
      argv: [...head(), ...fails('c1', 'token-1', 'boom', { keepCount: '0' }), ...fails('c2', 'token-2', 'boom', { keepCount: '0' })],
    },
    {
      name: 'a keep count: the oldest completed parent goes with its flow keys and logs, this one stays',
      before: {
        [k('p')]: parent('p', ['ats', '1', 'processedOn', '1700000090000']),
        [k('p:lock')]: lock('token-1'),
        [k('o')]: parent('o', ['ats', '1', 'processedOn', '1700000040000', 'atm', '1', 'finishedOn', '1700000050000', 'returnvalue', '1']),
        [k('o:processed')]: hash('emq:{children}:c9', '1'),
        [k('o:logs')]: list('line'),
        [k('active')]: list('p'),
        [k('completed')]: zset('o', '1700000050000'),
      },
      keys: KEYS,
      argv: [...head(), ...completes('p', 'token-1', '2', { keepCount: '1' })],
    },
    {
      name: 'a keep age: finished jobs older than the age, counted from this job\'s finishedOn (not now), go with their flow keys',
      before: {
        [k('p')]: parent('p', ['ats', '1', 'processedOn', '1700000090000']),
        [k('p:lock')]: lock('token-1'),
        [k('o')]: parent('o', ['ats', '1', 'processedOn', '1700000040000', 'atm', '1', 'finishedOn', '1700000050000', 'returnvalue', '1']),
        [k('o:processed')]: hash('emq:{children}:c9', '1'),
        [k('q')]: parent('q', ['ats', '1', 'processedOn', '1700000080000', 'atm', '1', 'finishedOn', '1700000089500', 'returnvalue', '1']),
        [k('active')]: list('p'),
        [k('completed')]: zset('o', '1700000050000', 'q', '1700000089500'),
      },
      keys: KEYS,
      argv: [...head(), ...completes('p', 'token-1', '2', { keepAge: '10000' })],
    },
    {
      name: 'maxActive given and active full after the finishes: no next job, no marker',
      before: {
        [k('c1')]: child('c1'),
        [k('c1:lock')]: lock('token-1'),
        [k('y')]: job('y', ['ats', '1', 'processedOn', '1700000090000']),
        [k('y:lock')]: lock('token-y'),
        [k('x')]: job('x'),
        [k('active')]: list('y', 'c1'),
        [k('wait')]: list('x'),
      },
      keys: KEYS,
      argv: [...head('1'), ...completes('c1', 'token-1', '1', { next: 'next-1' })],
    },
  ],
};
