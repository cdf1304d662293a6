import { NOW, hash, job, k, list, set, zset } from './_common.mjs';

const KEYS = [k('p'), k('p:dependencies'), k('p:pending'), k('flow-pending')];
const spec = (id) => JSON.stringify({ queueName: 'children', prefix: 'emq', record: { id, name: 'render', data: '{}', opts: '{}', timestamp: 1700000100000 } });
const running = (extra = []) => job('p', ['ats', '1', 'processedOn', '1700000090000', ...extra], { name: 'assemble' });

export default {
  script: 'addDependency-4.lua',
  about: 'The parent\'s side of an add with parent (docs/protocol.md, "Flows: step jobs and removal"): KEYS the parent\'s hash, its dependencies, its pending hash, flow-pending; ARGV parent id, the child\'s job key, its creation spec, now, the most dependencies a parent may have. The child key into dependencies, its spec into pending, the parent into flow-pending (scored now), fch 1 on the parent: 1, also when the child was a dependency already (a retried add, accepted at the limit too). 0 when the parent already has that many unsettled dependencies, -1 no parent: nothing changed.',
  cases: [
    {
      name: 'no parent hash: -1, nothing changed',
      before: { [k('wait')]: list('x') },
      keys: KEYS,
      argv: ['p', 'emq:{children}:c1', spec('c1'), NOW, '10000'],
    },
    {
      name: 'a running parent adds its first child: dependency, spec and flow-pending written, fch set, 1',
      before: { [k('p')]: running(), [k('active')]: list('p') },
      keys: KEYS,
      argv: ['p', 'emq:{children}:c1', spec('c1'), NOW, '10000'],
    },
    {
      name: 'the same child again at the limit (a retried add): recorded again, 1; the flow-pending score is now',
      before: {
        [k('p')]: running(['fch', '1']),
        [k('p:dependencies')]: set('emq:{children}:c1', 'emq:{children}:c2'),
        [k('p:pending')]: hash('emq:{children}:c1', spec('c1')),
        [k('flow-pending')]: zset('p', '1700000090000'),
        [k('active')]: list('p'),
      },
      keys: KEYS,
      argv: ['p', 'emq:{children}:c1', spec('c1'), NOW, '2'],
    },
    {
      name: 'a new child past the limit: 0, nothing changed',
      before: {
        [k('p')]: running(['fch', '1']),
        [k('p:dependencies')]: set('emq:{children}:c1', 'emq:{children}:c2'),
        [k('active')]: list('p'),
      },
      keys: KEYS,
      argv: ['p', 'emq:{children}:c3', spec('c3'), NOW, '2'],
    },
  ],
};
