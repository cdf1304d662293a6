// Shorthands for the cases of scripts/conformance-cases/ (read by scripts/record-conformance.mjs).
// They write the notation of docs/conformance.md, nothing more: the vectors stay plain JSON.

/** The time of every case (`now` in ARGV). */
export const NOW = '1700000100000';
/** When the cases' jobs were added. */
export const ADDED = '1700000000000';
/** The events max length every case passes. */
export const MAX_EVENTS = '10000';
/** The job-key prefix of the queue. */
export const PREFIX = 'emq:{Q}:';

/** The key `emq:{Q}:<name>`. */
export const k = (name) => `${PREFIX}${name}`;

export const str = (value, ttl) => (ttl === undefined ? { type: 'string', value } : { type: 'string', value, ttl });
export const hash = (...value) => ({ type: 'hash', value });
export const list = (...value) => ({ type: 'list', value });
export const set = (...value) => ({ type: 'set', value });
/** A zset, flat `member, score, ...` by rank. */
export const zset = (...value) => ({ type: 'zset', value });
export const stream = (...entries) => ({ type: 'stream', value: entries });

/**
 * A job hash as an add writes it (name, data, opts, timestamp, delay, priority), then `extra`
 * field/value pairs in order.
 */
export function job(id, extra = [], { name = 'email', delay = '0', priority = '0' } = {}) {
  return hash('name', name, 'data', `{"n":"${id}"}`, 'opts', '{}', 'timestamp', ADDED, 'delay', delay,
    'priority', priority, ...extra);
}

/** A lock held by `token`, under the default lockDuration. */
export const lock = (token = 'token-a') => str(token, 30000);
