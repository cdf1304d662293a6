import { MAX_EVENTS, NOW, PREFIX, hash, job, k, list, set, zset } from './_common.mjs';

const KEYS = [k('wait'), k('paused'), k('active'), k('prioritized'), k('delayed'), k('failed'), k('meta'), k('events'), k('1'),
  k('waiting-children'), k('notices'), k('notice-data')];
/** ARGV: jobId 1, the reason, now, keep count, keep age ms, events max length, job-key prefix. */
const argv = (reason, keepCount, keepAgeMs) => ['1', reason, NOW, keepCount, keepAgeMs, MAX_EVENTS, PREFIX];
const P = 'emq:{parents}:p';
const CHILD = 'emq:{children}:c2';
/** Job 1 as a child of P with the policy `pfp` ("" none). */
const child = (policy, extra = [], opts = {}) => job('1', ['parentKey', P, 'parent', '{"id":"p","queueKey":"emq:{parents}"}', 'pfp', policy, ...extra], opts);

export default {
  script: 'cancelJob-12.lua',
  about: "queue.cancelJob in the job's slot. A job still to run (wait, paused, prioritized, delayed, or a parent in waiting-children) is taken out and failed as cancelled at once: finishedOn now, failedReason \"job <id> was cancelled[: <reason>]\", cxl the reason, event failed; then kept in failed or removed by the keep rule (ARGV[4], ARGV[5]; the jobs it drops take their flow keys), and a simple-mode deduplication key naming it deleted. A job whose lock exists, or that is in active without one, is marked: cxl, and the meta field cancels incremented (HINCRBY), nothing else. A job marked already keeps its first reason. -1 no job, 0 finished (finishedOn), -3 a hash in no state: nothing written. 1 failed now, 2 marked. 3: failed now, a child of a flow (parentKey): as 1, and its notice for its parent written (KEYS[11] notices: id -> now, KEYS[12] notice-data: id -> [parentKey, \"failed\", failedReason, policy]; the policy its pfp, or \"remove\" when it had none and was removed now). A job removed now takes its flow keys with it.",
  cases: [
    {
      name: "no job hash: -1, nothing written",
      before: {"emq:{Q}:wait": {"type": "list", "value": ["2"]}},
      keys: KEYS,
      argv: argv("r", "-1", "0"),
    },
    {
      name: "a completed job (finishedOn): 0, nothing written",
      before: {"emq:{Q}:completed": {"type": "zset", "value": ["1", "1700000050000"]}, "emq:{Q}:1": {"type": "hash", "value": ["name", "send", "data", "{}", "opts", "{}", "timestamp", "1700000000000", "delay", "0", "priority", "0", "finishedOn", "1700000050000", "returnvalue", "\"ok\"", "atm", "1", "ats", "1"]}},
      keys: KEYS,
      argv: argv("r", "-1", "0"),
    },
    {
      name: "a failed job: 0, nothing written",
      before: {"emq:{Q}:failed": {"type": "zset", "value": ["1", "1700000050000"]}, "emq:{Q}:1": {"type": "hash", "value": ["name", "send", "data", "{}", "opts", "{}", "timestamp", "1700000000000", "delay", "0", "priority", "0", "finishedOn", "1700000050000", "failedReason", "boom", "atm", "1", "ats", "1"]}},
      keys: KEYS,
      argv: argv("r", "-1", "0"),
    },
    {
      name: "a waiting job: 1; out of wait, into failed at now, finishedOn, failedReason with the reason, cxl; atm and stacktrace kept; event failed",
      before: {"emq:{Q}:wait": {"type": "list", "value": ["3", "1", "2"]}, "emq:{Q}:1": {"type": "hash", "value": ["name", "send", "data", "{}", "opts", "{}", "timestamp", "1700000000000", "delay", "0", "priority", "0", "atm", "1", "ats", "1", "stacktrace", "[\"Error: first\"]"]}},
      keys: KEYS,
      argv: argv("the user asked", "-1", "0"),
    },
    {
      name: "a waiting job without a reason: failedReason \"job 1 was cancelled\", cxl \"\"",
      before: {"emq:{Q}:wait": {"type": "list", "value": ["1"]}, "emq:{Q}:1": {"type": "hash", "value": ["name", "send", "data", "{}", "opts", "{}", "timestamp", "1700000000000", "delay", "0", "priority", "0"]}},
      keys: KEYS,
      argv: argv("", "-1", "0"),
    },
    {
      name: "a paused job (the paused list): 1, out of paused",
      before: {"emq:{Q}:meta": {"type": "hash", "value": ["paused", "1"]}, "emq:{Q}:paused": {"type": "list", "value": ["2", "1"]}, "emq:{Q}:1": {"type": "hash", "value": ["name", "send", "data", "{}", "opts", "{}", "timestamp", "1700000000000", "delay", "0", "priority", "0"]}},
      keys: KEYS,
      argv: argv("r", "-1", "0"),
    },
    {
      name: "a prioritized job, keep count 1: 1; out of prioritized; the older failed job is removed with its logs",
      before: {"emq:{Q}:prioritized": {"type": "zset", "value": ["1", "12884901889", "2", "12884901890"]}, "emq:{Q}:failed": {"type": "zset", "value": ["9", "1700000000000"]}, "emq:{Q}:9": {"type": "hash", "value": ["name", "send", "data", "{}", "opts", "{}", "timestamp", "1700000000000", "delay", "0", "priority", "0", "finishedOn", "1700000000000", "failedReason", "old"]}, "emq:{Q}:9:logs": {"type": "list", "value": ["a line"]}, "emq:{Q}:1": {"type": "hash", "value": ["name", "send", "data", "{}", "opts", "{}", "timestamp", "1700000000000", "delay", "0", "priority", "3"]}},
      keys: KEYS,
      argv: argv("r", "1", "0"),
    },
    {
      name: "a delayed job, keep count 0 (removeOnFail true): 1; out of delayed, removed with its logs after its failed event",
      before: {"emq:{Q}:delayed": {"type": "zset", "value": ["1", "1700000500000"]}, "emq:{Q}:1": {"type": "hash", "value": ["name", "send", "data", "{}", "opts", "{}", "timestamp", "1700000000000", "delay", "400000", "priority", "0"]}, "emq:{Q}:1:logs": {"type": "list", "value": ["a line"]}},
      keys: KEYS,
      argv: argv("r", "0", "0"),
    },
    {
      name: "a delayed job, keep age 60 s: 1; failed jobs older than that removed",
      before: {"emq:{Q}:delayed": {"type": "zset", "value": ["1", "1700000500000"]}, "emq:{Q}:failed": {"type": "zset", "value": ["8", "1700000000000", "9", "1700000090000"]}, "emq:{Q}:8": {"type": "hash", "value": ["name", "send", "data", "{}", "opts", "{}", "timestamp", "1700000000000", "delay", "0", "priority", "0", "finishedOn", "1700000000000"]}, "emq:{Q}:9": {"type": "hash", "value": ["name", "send", "data", "{}", "opts", "{}", "timestamp", "1700000000000", "delay", "0", "priority", "0", "finishedOn", "1700000090000"]}, "emq:{Q}:1": {"type": "hash", "value": ["name", "send", "data", "{}", "opts", "{}", "timestamp", "1700000000000", "delay", "0", "priority", "0"]}},
      keys: KEYS,
      argv: argv("r", "-1", "60000"),
    },
    {
      name: "a running job (its lock exists): 2; cxl and meta cancels incremented, nothing else",
      before: {"emq:{Q}:active": {"type": "list", "value": ["1"]}, "emq:{Q}:meta": {"type": "hash", "value": ["cancels", "4"]}, "emq:{Q}:1": {"type": "hash", "value": ["name", "send", "data", "{}", "opts", "{}", "timestamp", "1700000000000", "delay", "0", "priority", "0", "ats", "1", "processedOn", "1700000090000"]}, "emq:{Q}:1:lock": {"type": "string", "value": "token-a", "ttl": 30000}},
      keys: KEYS,
      argv: argv("stop", "-1", "0"),
    },
    {
      name: "a running job marked already: 2; the first reason stays, the counter counts again",
      before: {"emq:{Q}:active": {"type": "list", "value": ["1"]}, "emq:{Q}:meta": {"type": "hash", "value": ["cancels", "1"]}, "emq:{Q}:1": {"type": "hash", "value": ["name", "send", "data", "{}", "opts", "{}", "timestamp", "1700000000000", "delay", "0", "priority", "0", "ats", "1", "cxl", "first"]}, "emq:{Q}:1:lock": {"type": "string", "value": "token-a", "ttl": 30000}},
      keys: KEYS,
      argv: argv("second", "-1", "0"),
    },
    {
      name: "a job in active without a lock (its worker died, not swept yet): 2; marked, the counter created",
      before: {"emq:{Q}:active": {"type": "list", "value": ["2", "1"]}, "emq:{Q}:1": {"type": "hash", "value": ["name", "send", "data", "{}", "opts", "{}", "timestamp", "1700000000000", "delay", "0", "priority", "0", "ats", "1"]}, "emq:{Q}:2": {"type": "hash", "value": ["name", "send", "data", "{}", "opts", "{}", "timestamp", "1700000000000", "delay", "0", "priority", "0", "ats", "1"]}, "emq:{Q}:2:lock": {"type": "string", "value": "token-b", "ttl": 30000}},
      keys: KEYS,
      argv: argv("", "-1", "0"),
    },
    {
      name: "a marked job back in wait (the sweep gave it back): 1; failed with its first reason",
      before: {"emq:{Q}:wait": {"type": "list", "value": ["1"]}, "emq:{Q}:1": {"type": "hash", "value": ["name", "send", "data", "{}", "opts", "{}", "timestamp", "1700000000000", "delay", "0", "priority", "0", "ats", "1", "stc", "1", "cxl", "first"]}},
      keys: KEYS,
      argv: argv("second", "-1", "0"),
    },
    {
      name: "a waiting job holding a simple-mode deduplication id: 1; its key deleted",
      before: {"emq:{Q}:wait": {"type": "list", "value": ["1"]}, "emq:{Q}:1": {"type": "hash", "value": ["name", "send", "data", "{}", "opts", "{}", "timestamp", "1700000000000", "delay", "0", "priority", "0", "deid", "house"]}, "emq:{Q}:de:house": {"type": "string", "value": "1"}},
      keys: KEYS,
      argv: argv("r", "-1", "0"),
    },
    {
      name: "a waiting job holding a throttle-mode deduplication id (a key with a TTL): 1; its key stays",
      before: {"emq:{Q}:wait": {"type": "list", "value": ["1"]}, "emq:{Q}:1": {"type": "hash", "value": ["name", "send", "data", "{}", "opts", "{}", "timestamp", "1700000000000", "delay", "0", "priority", "0", "deid", "house"]}, "emq:{Q}:de:house": {"type": "string", "value": "1", "ttl": 60000}},
      keys: KEYS,
      argv: argv("r", "-1", "0"),
    },
    {
      name: "a deduplication key that names another job: 1; the key stays",
      before: {"emq:{Q}:wait": {"type": "list", "value": ["1"]}, "emq:{Q}:1": {"type": "hash", "value": ["name", "send", "data", "{}", "opts", "{}", "timestamp", "1700000000000", "delay", "0", "priority", "0", "deid", "house"]}, "emq:{Q}:de:house": {"type": "string", "value": "7"}},
      keys: KEYS,
      argv: argv("r", "-1", "0"),
    },
    {
      name: "a hash in no state: -3, nothing written",
      before: {"emq:{Q}:wait": {"type": "list", "value": ["2"]}, "emq:{Q}:1": {"type": "hash", "value": ["name", "send", "data", "{}", "opts", "{}", "timestamp", "1700000000000", "delay", "0", "priority", "0"]}},
      keys: KEYS,
      argv: argv("r", "-1", "0"),
    },
    {
      name: 'a child of a flow, waiting, no policy, kept: 3; failed as above, and its notice for its parent (policy "") scored now',
      before: { [k('wait')]: list('1'), [k('1')]: child('') },
      keys: KEYS,
      argv: argv('r', '-1', '0'),
    },
    {
      name: 'a child with failParentOnFailure, delayed: 3; its notice carries the reason and the policy fail',
      before: { [k('delayed')]: zset('1', '1700000200000'), [k('1')]: child('fail') },
      keys: KEYS,
      argv: argv('', '-1', '0'),
    },
    {
      name: 'a child with no policy removed now (keep count 0): 3; removed, its notice says remove (no failure of its parent\'s)',
      before: { [k('wait')]: list('1'), [k('1')]: child(''), [k('1:logs')]: list('a line') },
      keys: KEYS,
      argv: argv('r', '0', '0'),
    },
    {
      name: 'a child with ignoreDependencyOnFailure removed now: 3; its notice keeps the policy ignore',
      before: { [k('prioritized')]: zset('1', '4000000000001'), [k('1')]: child('ignore', [], { priority: '4' }) },
      keys: KEYS,
      argv: argv('r', '0', '0'),
    },
    {
      name: 'a parent in waiting-children: 1; out of waiting-children, failed as cancelled, its flow keys kept',
      before: {
        [k('waiting-children')]: zset('1', '1700000050000'), [k('1')]: job('1'),
        [k('1:dependencies')]: set(CHILD), [k('1:processed')]: hash('emq:{children}:c1', '"v"'),
      },
      keys: KEYS,
      argv: argv('r', '-1', '0'),
    },
    {
      name: 'a parent in waiting-children removed now (keep count 0): 1; removed with every flow key',
      before: {
        [k('waiting-children')]: zset('1', '1700000050000'), [k('1')]: job('1'),
        [k('1:dependencies')]: set(CHILD), [k('1:processed')]: hash('emq:{children}:c1', '"v"'),
        [k('1:unsuccessful')]: hash('emq:{children}:c3', 'boom'), [k('1:ignored')]: hash('emq:{children}:c4', 'boom'),
        [k('1:pending')]: hash(CHILD, '{}'),
      },
      keys: KEYS,
      argv: argv('r', '0', '0'),
    },
    {
      name: 'keep count 1 drops an older failed parent with its flow keys',
      before: {
        [k('wait')]: list('1'), [k('1')]: job('1'),
        [k('failed')]: zset('9', '1700000050000'), [k('9')]: job('9', ['finishedOn', '1700000050000', 'failedReason', 'boom']),
        [k('9:processed')]: hash('emq:{children}:c1', '"v"'),
      },
      keys: KEYS,
      argv: argv('r', '1', '0'),
    },
  ],
};
