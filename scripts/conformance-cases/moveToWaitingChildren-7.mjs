import { MAX_EVENTS, NOW, job, k, list, lock, set, zset } from './_common.mjs';

const KEYS = [k('active'), k('stalled'), k('waiting-children'), k('events'), k('p'), k('p:lock'), k('p:dependencies')];
const running = (extra = []) => job('p', ['ats', '1', 'processedOn', '1700000090000', 'fch', '1', ...extra], { name: 'assemble', delay: '5000' });

export default {
  script: 'moveToWaitingChildren-7.lua',
  about: 'job.moveToWaitingChildren (a step job waits for its children): KEYS active, stalled, waiting-children, events, the job\'s hash, its lock, its dependencies; ARGV jobId, token, now, events max length, a child\'s job key to wait for ("" = any). Checks in order, nothing changed on a refusal: -1 no job hash, -2 no lock, -6 another token, -3 not in active; the job\'s cfr (a string) when a child failed with policy fail meanwhile; 0 when there is nothing to wait for (no dependency, or the named child is none). Otherwise 1: out of active, the lock DELeted, SREM stalled, delay 0 and fch 1, into waiting-children scored now, event waiting-children.',
  cases: [
    {
      name: 'no job hash: -1, nothing changed',
      before: { [k('p:lock')]: lock(), [k('active')]: list('p') },
      keys: KEYS,
      argv: ['p', 'token-a', NOW, MAX_EVENTS, ''],
    },
    {
      name: 'no lock: -2, nothing changed',
      before: { [k('p')]: running(), [k('active')]: list('p'), [k('p:dependencies')]: set('emq:{children}:c1') },
      keys: KEYS,
      argv: ['p', 'token-a', NOW, MAX_EVENTS, ''],
    },
    {
      name: 'another token holds the lock: -6, nothing changed',
      before: { [k('p')]: running(), [k('p:lock')]: lock('token-b'), [k('active')]: list('p'), [k('p:dependencies')]: set('emq:{children}:c1') },
      keys: KEYS,
      argv: ['p', 'token-a', NOW, MAX_EVENTS, ''],
    },
    {
      name: 'locked but not in active: -3, nothing changed',
      before: { [k('p')]: running(), [k('p:lock')]: lock(), [k('p:dependencies')]: set('emq:{children}:c1') },
      keys: KEYS,
      argv: ['p', 'token-a', NOW, MAX_EVENTS, ''],
    },
    {
      name: 'a child failed with policy fail meanwhile: the job\'s cfr, nothing changed',
      before: {
        [k('p')]: running(['cfr', 'child emq:{children}:c2 failed: boom']),
        [k('p:lock')]: lock(),
        [k('active')]: list('p'),
        [k('p:dependencies')]: set('emq:{children}:c1'),
      },
      keys: KEYS,
      argv: ['p', 'token-a', NOW, MAX_EVENTS, ''],
    },
    {
      name: 'no dependency left (every child settled): 0, nothing changed',
      before: { [k('p')]: running(), [k('p:lock')]: lock(), [k('active')]: list('p') },
      keys: KEYS,
      argv: ['p', 'token-a', NOW, MAX_EVENTS, ''],
    },
    {
      name: 'the named child is no dependency (settled already): 0, nothing changed',
      before: { [k('p')]: running(), [k('p:lock')]: lock(), [k('active')]: list('p'), [k('p:dependencies')]: set('emq:{children}:c1') },
      keys: KEYS,
      argv: ['p', 'token-a', NOW, MAX_EVENTS, 'emq:{children}:c2'],
    },
    {
      name: 'an unsettled child: out of active and stalled, the lock DELeted, delay 0, into waiting-children at now, event waiting-children; 1',
      before: {
        [k('p')]: running(),
        [k('p:lock')]: lock(),
        [k('active')]: list('x', 'p'),
        [k('stalled')]: set('p', 'x'),
        [k('p:dependencies')]: set('emq:{children}:c1'),
        [k('waiting-children')]: zset('q', '1700000050000'),
      },
      keys: KEYS,
      argv: ['p', 'token-a', NOW, MAX_EVENTS, ''],
    },
    {
      name: 'the named child is a dependency: moved, 1; a job without fch gets it',
      before: {
        [k('p')]: job('p', ['ats', '1', 'processedOn', '1700000090000'], { name: 'assemble' }),
        [k('p:lock')]: lock(),
        [k('active')]: list('p'),
        [k('p:dependencies')]: set('emq:{children}:c1', 'emq:{children}:c2'),
      },
      keys: KEYS,
      argv: ['p', 'token-a', NOW, MAX_EVENTS, 'emq:{children}:c2'],
    },
  ],
};
