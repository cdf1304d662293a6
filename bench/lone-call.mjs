// The shape of a lone finish's request, as a worker at concurrency 1 sends it: moveToFinished-14's
// 14 KEYS and 15 ARGV. bench:scripts sends it to scripts that do nothing or little, to count what
// a call costs before its script runs; the bench's request-floor scenario sends it to a script
// that returns at once, to read the Redis CPU of a request alone. The KEYS and ARGV follow
// Scripts.moveToFinished in lib/protocol/scripts.ts (a finish that asks for the next job, keeping
// all, no rate limit): change one with the other.
import { randomUUID as uuid } from 'node:crypto';
import { Keys } from '../dist/lib/index.js';
import { PICKUP_KEYS } from '../dist/lib/internal.js';

/** KEYS of a lone finish of job 1234 on queue `queueName`, and a fresh ARGV for each call. */
export function loneFinishRequest(queueName) {
  const keys = new Keys(queueName);
  return {
    keys: [...PICKUP_KEYS.map((name) => keys[name]), keys.state('completed'), keys.job('1234'), keys.lock('1234')],
    args: () => ['1234', uuid(), String(Date.now()), 'completed', 'null', '', '-1', '0', '1', keys.base, uuid(), '30000', '10000', '0', '0'],
  };
}
