import { MAX_EVENTS, NOW, hash, job, k, list, lock, set, str, zset } from './_common.mjs';

const KEYS = [k('wait'), k('paused'), k('active'), k('prioritized'), k('delayed'), k('completed'), k('failed'),
  k('stalled'), k('events'), k('1'), k('waiting-children'), k('flow-pending'), k('notices'), k('notice-data')];
const P = 'emq:{parents}:p';
const PARENT = '{"id":"p","queueKey":"emq:{parents}"}';
/** ARGV: jobId 1, events max length, answer children, leave a notice, now, then the expected parent when given. */
const argv = (children, notice, ...expected) => ['1', MAX_EVENTS, children, notice, NOW, ...expected];
const child = (policy = '', extra = []) => job('1', ['parentKey', P, 'parent', PARENT, 'pfp', policy, ...extra], { name: 'render' });
const notice = (...fields) => JSON.stringify(fields);
const spec = (id) => JSON.stringify({ queueName: 'children', prefix: 'emq', record: { id, name: 'render', data: '{}', opts: '{}', timestamp: 1700000000000 } });

export default {
  script: 'removeJob-14.lua',
  about: 'Remove one job from whatever state it is in, with its flow keys (docs/protocol.md, "Flows: step jobs and removal"): KEYS wait, paused, active, prioritized, delayed, completed, failed, stalled, events, the job\'s hash, waiting-children, flow-pending, notices, notice-data; ARGV jobId, events max length, "1" to answer the job\'s unsettled children, "1" to leave a notice for its parent, now, optionally the parent key the caller expects. {-1} no job; {0} its lock exists; {2} an expected parent that is not its parentKey: nothing changed. Otherwise out of every state, its hash, logs and flow keys deleted (and a simple-mode deduplication key naming it: no TTL), event removed, and {1, notice or "", child keys...}: a child (with ARGV[4] "1") leaves the notice [parentKey, failed, removed, remove] scored now, unless a readable notice of its finish for that parent says more (a completion, or a failure with a policy: kept and answered); with ARGV[4] "0", or for a job with no parent, a notice it left is deleted. A parent answers its dependencies, then the children its intent (pending) holds that are not among them.',
  cases: [
    {
      name: 'no job hash: {-1}, nothing changed',
      before: { [k('wait')]: list('2') },
      keys: KEYS,
      argv: argv('1', '1'),
    },
    {
      name: 'a worker holds its lock: {0}, nothing changed',
      before: { [k('1')]: job('1', ['ats', '1', 'processedOn', '1700000090000']), [k('1:lock')]: lock(), [k('active')]: list('1') },
      keys: KEYS,
      argv: argv('1', '1'),
    },
    {
      name: 'the expected parent is not its parentKey (another parent\'s child now): {2}, nothing changed',
      before: { [k('1')]: child(), [k('wait')]: list('1') },
      keys: KEYS,
      argv: argv('1', '0', 'emq:{parents}:other'),
    },
    {
      name: 'an expected parent and a job with none: {2}, nothing changed',
      before: { [k('1')]: job('1'), [k('wait')]: list('1') },
      keys: KEYS,
      argv: argv('1', '0', P),
    },
    {
      name: 'a waiting job: out of wait with its logs, event removed; {1, ""}',
      before: { [k('1')]: job('1'), [k('1:logs')]: list('a line'), [k('2')]: job('2'), [k('wait')]: list('2', '1') },
      keys: KEYS,
      argv: argv('1', '1'),
    },
    {
      name: 'a waiting job holding a simple-mode deduplication id: its key (no TTL, naming it) deleted; another job\'s key stays',
      before: {
        [k('1')]: job('1', ['deid', 'house']), [k('wait')]: list('1'), [k('de:house')]: str('1'),
        [k('de:other')]: str('2'),
      },
      keys: KEYS,
      argv: argv('1', '1'),
    },
    {
      name: 'a waiting job holding a throttle-mode id (a key with a TTL): the key stays until it expires',
      before: { [k('1')]: job('1', ['deid', 'house']), [k('wait')]: list('1'), [k('de:house')]: str('1', 60000) },
      keys: KEYS,
      argv: argv('1', '1'),
    },
    {
      name: 'a job in active without a lock (its worker died): out of active and stalled',
      before: { [k('1')]: job('1', ['ats', '1', 'processedOn', '1700000090000']), [k('active')]: list('1'), [k('stalled')]: set('1') },
      keys: KEYS,
      argv: argv('1', '1'),
    },
    {
      name: 'a completed job: out of completed',
      before: {
        [k('1')]: job('1', ['ats', '1', 'processedOn', '1700000090000', 'atm', '1', 'finishedOn', '1700000095000', 'returnvalue', '"ok"']),
        [k('completed')]: zset('1', '1700000095000'),
      },
      keys: KEYS,
      argv: argv('1', '1'),
    },
    {
      name: 'a child: removed, its notice (failed, removed, policy remove) written at now and answered',
      before: { [k('1')]: child(), [k('wait')]: list('1') },
      keys: KEYS,
      argv: argv('1', '1'),
    },
    {
      name: 'a child whose completion was not delivered yet: that notice is kept and answered',
      before: {
        [k('1')]: child('', ['ats', '1', 'processedOn', '1700000090000', 'atm', '1', 'finishedOn', '1700000095000', 'returnvalue', '{"page":1}']),
        [k('completed')]: zset('1', '1700000095000'),
        [k('notices')]: zset('1', '1700000095000'),
        [k('notice-data')]: hash('1', notice(P, 'completed', '{"page":1}', '')),
      },
      keys: KEYS,
      argv: argv('1', '1'),
    },
    {
      name: 'a child whose failure with a policy was not delivered yet: that notice is kept',
      before: {
        [k('1')]: child('fail', ['ats', '1', 'processedOn', '1700000090000', 'atm', '1', 'finishedOn', '1700000095000', 'failedReason', 'boom', 'stacktrace', '[]']),
        [k('failed')]: zset('1', '1700000095000'),
        [k('notices')]: zset('1', '1700000095000'),
        [k('notice-data')]: hash('1', notice(P, 'failed', 'boom', 'fail')),
      },
      keys: KEYS,
      argv: argv('1', '1'),
    },
    {
      name: 'a child whose failure with no policy was not delivered yet: replaced by the removal\'s notice (the parent would wait for ever)',
      before: {
        [k('1')]: child('', ['ats', '1', 'processedOn', '1700000090000', 'atm', '1', 'finishedOn', '1700000095000', 'failedReason', 'boom', 'stacktrace', '[]']),
        [k('failed')]: zset('1', '1700000095000'),
        [k('notices')]: zset('1', '1700000095000'),
        [k('notice-data')]: hash('1', notice(P, 'failed', 'boom', '')),
      },
      keys: KEYS,
      argv: argv('1', '1'),
    },
    {
      name: 'a child whose stored notice is no notice (bad JSON): replaced by the removal\'s',
      before: {
        [k('1')]: child(),
        [k('wait')]: list('1'),
        [k('notices')]: zset('1', '1700000095000'),
        [k('notice-data')]: hash('1', '{not json'),
      },
      keys: KEYS,
      argv: argv('1', '1'),
    },
    {
      name: 'a child whose stored notice is for another parent (its id was used by another job before): replaced by the removal\'s',
      before: {
        [k('1')]: child(),
        [k('wait')]: list('1'),
        [k('notices')]: zset('1', '1700000095000'),
        [k('notice-data')]: hash('1', notice('emq:{parents}:old', 'completed', '1', '')),
      },
      keys: KEYS,
      argv: argv('1', '1'),
    },
    {
      name: 'a child removed with its parent (no notice, the expected parent given): a notice it left is deleted; {1, ""}',
      before: {
        [k('1')]: child('', ['ats', '1', 'processedOn', '1700000090000', 'atm', '1', 'finishedOn', '1700000095000', 'returnvalue', '1']),
        [k('completed')]: zset('1', '1700000095000'),
        [k('notices')]: zset('1', '1700000095000', '2', '1700000096000'),
        [k('notice-data')]: hash('1', notice(P, 'completed', '1', ''), '2', notice(P, 'completed', '2', '')),
      },
      keys: KEYS,
      argv: argv('1', '0', P),
    },
    {
      name: 'a parent in waiting-children: its flow keys and intent go, it leaves flow-pending; it answers its dependency, then the pending children that are no dependency',
      before: {
        [k('1')]: job('1', ['fch', '1'], { name: 'assemble' }),
        [k('1:dependencies')]: set('emq:{children}:c1'),
        [k('1:pending')]: hash('emq:{children}:c1', spec('c1'), 'emq:{children}:c2', spec('c2')),
        [k('1:processed')]: hash('emq:{children}:c0', '"ok"'),
        [k('1:unsuccessful')]: hash('emq:{children}:c3', 'boom'),
        [k('1:ignored')]: hash('emq:{children}:c4', 'boom'),
        [k('waiting-children')]: zset('1', '1700000000000'),
        [k('flow-pending')]: zset('1', '1700000000000'),
      },
      keys: KEYS,
      argv: argv('1', '1'),
    },
    {
      name: 'a parent with children not asked for (ARGV[3] "0"): {1, ""}, its flow keys go all the same',
      before: {
        [k('1')]: job('1', ['fch', '1'], { name: 'assemble' }),
        [k('1:dependencies')]: set('emq:{children}:c1'),
        [k('waiting-children')]: zset('1', '1700000000000'),
      },
      keys: KEYS,
      argv: argv('0', '1'),
    },
  ],
};
