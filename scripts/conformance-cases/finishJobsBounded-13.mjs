import { MAX_EVENTS, NOW, PREFIX, hash, job, k, list, lock, set, str, zset } from './_common.mjs';

const KEYS = [k('wait'), k('active'), k('prioritized'), k('events'), k('stalled'), k('limiter'), k('delayed'),
  k('paused'), k('meta'), k('pc'), k('marker'), k('completed'), k('failed')];
/** ARGV[1..7]: prefix, now, events max length, lockDuration, rate limit max and window, maxActive. */
const head = (maxActive, rateLimitMax = '0', rateLimitWindow = '0') => [PREFIX, NOW, MAX_EVENTS, '30000', rateLimitMax, rateLimitWindow, maxActive];
const FINISHED_ON = '1700000099000';
/** The nine fields of a job that completes: kept (keep count -1), with an optional next token. */
const completes = (id, token, next = '', keepCount = '-1') => [id, token, 'completed', `"done ${id}"`, '', keepCount, '0', next, FINISHED_ON];
const running = (id, ats = '1') => job(id, ['ats', ats, 'processedOn', '1700000090000']);

export default {
  script: 'finishJobsBounded-13.lua',
  about: 'finishJobs-13 under a queue-wide concurrency (docs/protocol.md, "Queue-wide limits"): KEYS the eleven pickup keys, completed, failed; ARGV prefix, now, events max length, lockDuration, rate limit max and window, maxActive, then nine fields a job (jobId, token, completed or failed, returnvalue or failedReason, stacktrace, keep count, keep age ms, next token or "", finishedOn). Each job has its own lock check (-1 no hash, -2 no lock, -6 another token, -3 not in active: that job left as it was, no next job for it) and moveToFinished-14\'s writes (finishedOn, atm, the set scored by finishedOn, the event, the keep rule; the events trimmed once at the end). Then fetch-next takes no more jobs than active has room for under maxActive once the finishes left it (the first finishes that asked get them), promoting due delayed jobs first; and while active still has room and wait or prioritized holds jobs (not paused, not rate limited) the marker ZADD 0 "0". Reply { results (code, next jobId or 0, next hash or {} per job), nextDelayedAt, rateLimitedForMs }.',
  cases: [
    {
      name: 'every refusal leaves its job as it was and takes no next job: -1, -2, -6, -3; active has room and wait a job, so the marker is set',
      before: {
        [k('2')]: running('2'),
        [k('3')]: running('3'),
        [k('3:lock')]: lock('token-b'),
        [k('4')]: running('4'),
        [k('4:lock')]: lock('token-4'),
        [k('5')]: job('5'),
        [k('active')]: list('3', '2', '1'),
        [k('wait')]: list('5'),
      },
      keys: KEYS,
      argv: [...head('10'), ...completes('1', 'token-1', 'next-1'), ...completes('2', 'token-2', 'next-2'),
        ...completes('3', 'token-3', 'next-3'), ...completes('4', 'token-4', 'next-4')],
    },
    {
      name: 'two finishes ask for a next job with room for one: the first gets it (locked, ats, processedOn now), the second none; active full, no marker',
      before: {
        [k('1')]: running('1'),
        [k('1:lock')]: lock('token-1'),
        [k('2')]: running('2'),
        [k('2:lock')]: lock('token-2'),
        [k('3')]: running('3'),
        [k('3:lock')]: lock('token-3'),
        [k('4')]: job('4'),
        [k('5')]: job('5'),
        [k('active')]: list('3', '2', '1'),
        [k('stalled')]: set('1'),
        [k('wait')]: list('5', '4'),
      },
      keys: KEYS,
      argv: [...head('2'), ...completes('1', 'token-1', 'next-1'), ...completes('2', 'token-2', 'next-2')],
    },
    {
      name: 'a bound lowered below what runs: a finish takes no next job while active holds maxActive or more, no marker',
      before: {
        [k('1')]: running('1'),
        [k('1:lock')]: lock('token-1'),
        [k('2')]: running('2'),
        [k('2:lock')]: lock('token-2'),
        [k('3')]: running('3'),
        [k('3:lock')]: lock('token-3'),
        [k('4')]: job('4'),
        [k('active')]: list('3', '2', '1'),
        [k('wait')]: list('4'),
      },
      keys: KEYS,
      argv: [...head('1'), ...completes('1', 'token-1', 'next-1')],
    },
    {
      name: 'a finish without fetch-next leaves room and ready work: the marker is set for a blocked worker; a failure with stacktrace',
      before: {
        [k('1')]: running('1'),
        [k('1:lock')]: lock('token-1'),
        [k('4')]: job('4', [], { priority: '1' }),
        [k('active')]: list('1'),
        [k('prioritized')]: zset('4', '4294967297'),
        [k('pc')]: str('1'),
      },
      keys: KEYS,
      argv: [...head('2'), '1', 'token-1', 'failed', 'boom', '["Error: boom"]', '-1', '0', '', FINISHED_ON],
    },
    {
      name: 'room and a due delayed job: it is promoted and taken by the fetch-next; nextDelayedAt the next delayed job',
      before: {
        [k('1')]: running('1'),
        [k('1:lock')]: lock('token-1'),
        [k('6')]: job('6', [], { delay: '5000' }),
        [k('7')]: job('7', [], { delay: '600000' }),
        [k('active')]: list('1'),
        [k('delayed')]: zset('6', '1700000005000', '7', '1700000600000'),
      },
      keys: KEYS,
      argv: [...head('2'), ...completes('1', 'token-1', 'next-1')],
    },
    {
      name: 'paused: the finish lands, a due delayed job is promoted into paused, no next job, no marker',
      before: {
        [k('1')]: running('1'),
        [k('1:lock')]: lock('token-1'),
        [k('4')]: job('4'),
        [k('6')]: job('6', [], { delay: '5000' }),
        [k('active')]: list('1'),
        [k('paused')]: list('4'),
        [k('delayed')]: zset('6', '1700000005000'),
        [k('meta')]: hash('paused', '1'),
      },
      keys: KEYS,
      argv: [...head('2'), ...completes('1', 'token-1', 'next-1')],
    },
    {
      name: 'rate limited: no next job, rateLimitedForMs the limiter\'s PTTL, no marker',
      before: {
        [k('1')]: running('1'),
        [k('1:lock')]: lock('token-1'),
        [k('4')]: job('4'),
        [k('active')]: list('1'),
        [k('wait')]: list('4'),
        [k('limiter')]: str('1', 1000),
      },
      keys: KEYS,
      argv: [...head('2', '1', '1000'), ...completes('1', 'token-1', 'next-1')],
      reply: (r) => [r[0], r[1], { atMost: 1000 }],
    },
    {
      name: 'a keep count: the oldest completed job goes with its logs, this one stays',
      before: {
        [k('1')]: running('1'),
        [k('1:lock')]: lock('token-1'),
        [k('8')]: job('8', ['ats', '1', 'processedOn', '1700000040000', 'atm', '1', 'finishedOn', '1700000050000', 'returnvalue', '"done 8"']),
        [k('8:logs')]: list('line'),
        [k('active')]: list('1'),
        [k('completed')]: zset('8', '1700000050000'),
      },
      keys: KEYS,
      argv: [...head('2'), ...completes('1', 'token-1', '', '1')],
    },
  ],
};
