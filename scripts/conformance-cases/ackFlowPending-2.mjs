import { hash, k, zset } from './_common.mjs';

const KEYS = [k('p:pending'), k('flow-pending')];
const spec = (id) => JSON.stringify({ queueName: 'children', prefix: 'emq', record: { id, name: 'render', data: '{}', opts: '{}', timestamp: 1700000000000 } });

export default {
  script: 'ackFlowPending-2.lua',
  about: 'The children of a parent were made (docs/protocol.md, "Flows"): KEYS the parent\'s pending hash, flow-pending; ARGV parent id, then child job keys. Their specs leave the pending hash (HDEL); when none is left the parent leaves flow-pending (so does a parent whose intent is gone, called with no child key). Returns how many specs are left.',
  cases: [
    {
      name: 'one of two children made: its spec goes, 1 left, the parent stays in flow-pending',
      before: {
        [k('p:pending')]: hash('emq:{children}:c1', spec('c1'), 'emq:{children}:c2', spec('c2')),
        [k('flow-pending')]: zset('p', '1700000090000', 'q', '1700000095000'),
      },
      keys: KEYS,
      argv: ['p', 'emq:{children}:c1'],
    },
    {
      name: 'the last children made: 0 left, the parent leaves flow-pending',
      before: {
        [k('p:pending')]: hash('emq:{children}:c1', spec('c1'), 'emq:{children}:c2', spec('c2')),
        [k('flow-pending')]: zset('p', '1700000090000', 'q', '1700000095000'),
      },
      keys: KEYS,
      argv: ['p', 'emq:{children}:c1', 'emq:{children}:c2'],
    },
    {
      name: 'a child key acknowledged before: nothing to delete, the count of specs left',
      before: {
        [k('p:pending')]: hash('emq:{children}:c2', spec('c2')),
        [k('flow-pending')]: zset('p', '1700000090000'),
      },
      keys: KEYS,
      argv: ['p', 'emq:{children}:c1'],
    },
    {
      name: 'no child key and no intent (the parent was removed): it leaves flow-pending, 0',
      before: { [k('flow-pending')]: zset('p', '1700000090000', 'q', '1700000095000') },
      keys: KEYS,
      argv: ['p'],
    },
  ],
};
