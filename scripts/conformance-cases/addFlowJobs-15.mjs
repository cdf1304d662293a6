import { MAX_EVENTS, NOW, PREFIX, hash, job, k, list, set, str, zset } from './_common.mjs';

const KEYS = [k('wait'), k('paused'), k('meta'), k('id'), k('delayed'), k('prioritized'), k('pc'), k('marker'),
  k('events'), k('waiting-children'), k('flow-pending'), k('completed'), k('failed'), k('notices'), k('notice-data')];
const P = 'emq:{parents}:p';
const PARENT = '{"id":"p","queueKey":"emq:{parents}"}';
const head = [PREFIX, MAX_EVENTS, NOW];
const ADDED_AT = '1700000095000';
/**
 * One job's fields: id, name, data, opts, timestamp, delay, priority, lifo, parent key, parent,
 * policy, then its children as [key, spec] pairs.
 */
function entry(id, { name = 'render', delay = '0', priority = '0', lifo = '0', parentKey = P, parent = PARENT, policy = '', children = [] } = {}) {
  return [id, name, `{"n":"${id}"}`, '{}', ADDED_AT, delay, priority, lifo, parentKey, parentKey === '' ? '' : parent, policy,
    String(children.length), ...children.flat()];
}
const spec = (id) => JSON.stringify({ queueName: 'children', prefix: 'emq', record: { id, name: 'render', data: '{}', opts: '{}', timestamp: 1700000095000 } });
const existingChild = (id, extra = [], policy = '') => hash('name', 'render', 'data', `{"n":"${id}"}`, 'opts', '{}', 'timestamp', '1700000000000',
  'delay', '0', 'priority', '0', 'parentKey', P, 'parent', PARENT, 'pfp', policy, ...extra);

export default {
  script: 'addFlowJobs-15.lua',
  about: 'FlowProducer: jobs of a flow added to one queue (docs/protocol.md, "Flows"). KEYS wait, paused, meta, id, delayed, prioritized, pc, marker, events, waiting-children, flow-pending, completed, failed, notices, notice-data; ARGV prefix, events max length, now, then per job: id, name, data, opts, timestamp, delay, priority, lifo, parent key, parent JSON, policy, n, then n pairs child key, spec. A job with children: its hash with fch (lifo when asked), its children in :dependencies and their specs in :pending, into waiting-children scored by its timestamp and flow-pending by now, event waiting-children. A job without: added as addJob-9 adds one (wait, paused, prioritized or delayed, with its event; the marker once a call for a ready job unless paused). A child gets parentKey, parent and pfp. One code a job: 1 added; 0 it exists with the same parent link (a root: with none), unchanged; 3 the same and finished (in completed or failed): its notice written again from its hash; 2 it exists with another parent link: unchanged.',
  cases: [
    {
      name: 'a root with two children: fch, its dependencies and their specs, waiting-children by its timestamp, flow-pending by now, event waiting-children; 1',
      before: {},
      keys: KEYS,
      argv: [...head, ...entry('p', { name: 'assemble', parentKey: '', children: [['emq:{children}:c1', spec('c1')], ['emq:{children}:c2', spec('c2')]] })],
    },
    {
      name: 'children of a parent elsewhere: ready, prioritized and delayed, each with its parent link; the marker once; 1, 1, 1',
      before: { [k('pc')]: str('4') },
      keys: KEYS,
      argv: [...head, ...entry('c1', { policy: 'fail' }), ...entry('c2', { priority: '2', policy: 'ignore' }),
        ...entry('c3', { delay: '5000', policy: 'continue' })],
    },
    {
      name: 'a child with lifo goes to the right end of wait',
      before: { [k('x')]: job('x'), [k('wait')]: list('x') },
      keys: KEYS,
      argv: [...head, ...entry('c1', { lifo: '1' })],
    },
    {
      name: 'paused: a ready child goes to paused, no marker',
      before: { [k('meta')]: hash('paused', '1') },
      keys: KEYS,
      argv: [...head, ...entry('c1')],
    },
    {
      name: 'a parent that is a child itself (a middle level), with lifo: fch, lifo and its parent link',
      before: {},
      keys: KEYS,
      argv: [...head, ...entry('m', { name: 'bundle', lifo: '1', policy: 'remove', children: [['emq:{leaves}:l1', spec('l1')]] })],
    },
    {
      name: 'a child that exists with this parent link and has not finished: 0, unchanged',
      before: { [k('c1')]: existingChild('c1'), [k('wait')]: list('c1') },
      keys: KEYS,
      argv: [...head, ...entry('c1')],
    },
    {
      name: 'a child that exists with this parent link and completed: 3, its notice written again (its returnvalue and policy) at now',
      before: {
        [k('c1')]: existingChild('c1', ['ats', '1', 'processedOn', '1700000090000', 'atm', '1', 'finishedOn', '1700000095000', 'returnvalue', '{"page":1}'], 'ignore'),
        [k('completed')]: zset('c1', '1700000095000'),
      },
      keys: KEYS,
      argv: [...head, ...entry('c1', { policy: 'ignore' })],
    },
    {
      name: 'a child that exists with this parent link and failed: 3, its notice written again (its failedReason and policy)',
      before: {
        [k('c1')]: existingChild('c1', ['ats', '1', 'processedOn', '1700000090000', 'atm', '1', 'finishedOn', '1700000095000', 'failedReason', 'boom', 'stacktrace', '[]'], 'fail'),
        [k('failed')]: zset('c1', '1700000095000'),
      },
      keys: KEYS,
      argv: [...head, ...entry('c1', { policy: 'fail' })],
    },
    {
      name: 'an id held by another job (no parent link, or another parent): 2, unchanged; the others of the call are added',
      before: {
        [k('c1')]: job('c1'),
        [k('c2')]: hash('name', 'render', 'data', '{}', 'opts', '{}', 'timestamp', '1700000000000', 'delay', '0', 'priority', '0',
          'parentKey', 'emq:{parents}:other', 'parent', '{"id":"other","queueKey":"emq:{parents}"}', 'pfp', ''),
        [k('wait')]: list('c2', 'c1'),
      },
      keys: KEYS,
      argv: [...head, ...entry('c1'), ...entry('c2'), ...entry('c3')],
    },
    {
      name: 'a root that exists with no parent link: 0, unchanged; a root added again with an id another flow\'s child holds: 2',
      before: {
        [k('p')]: hash('name', 'assemble', 'data', '{"n":"p"}', 'opts', '{}', 'timestamp', ADDED_AT, 'delay', '0', 'priority', '0', 'fch', '1'),
        [k('p:dependencies')]: set('emq:{children}:c1'),
        [k('waiting-children')]: zset('p', ADDED_AT),
        [k('c9')]: existingChild('c9'),
        [k('wait')]: list('c9'),
      },
      keys: KEYS,
      argv: [...head, ...entry('p', { name: 'assemble', parentKey: '', children: [['emq:{children}:c1', spec('c1')]] }),
        ...entry('c9', { parentKey: '' })],
    },
  ],
};
