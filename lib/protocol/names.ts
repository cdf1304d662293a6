import { EchoMQOptionError } from './errors.js';
import { QUEUE_KEY_NAMES } from './keys.js';

/** Longest queue name accepted; keys stay short and readable. */
export const MAX_QUEUE_NAME_LENGTH = 200;
/** Longest custom job id accepted. */
export const MAX_JOB_ID_LENGTH = 400;
/** Longest deduplication id accepted: it is part of a key (`P:{Q}:de:<id>`), as a job id is. */
export const MAX_DEDUPLICATION_ID_LENGTH = 400;

const RESERVED = new Set<string>(QUEUE_KEY_NAMES);

/** A queue name is non-empty, at most 200 characters, and holds no `:`, `{` or `}` (PROTOCOL.md L1). */
export function assertQueueName(name: unknown, field = 'queue name'): asserts name is string {
  if (typeof name !== 'string' || name.length === 0) {
    throw new EchoMQOptionError(field, `must be a non-empty string, got ${describe(name)}`);
  }
  if (name.length > MAX_QUEUE_NAME_LENGTH) {
    throw new EchoMQOptionError(field, `is ${name.length} characters long; at most ${MAX_QUEUE_NAME_LENGTH} are allowed`);
  }
  if (/[:{}]/.test(name)) {
    throw new EchoMQOptionError(field, `"${name}" holds ":", "{" or "}", which are part of the key syntax; use "-" or "." instead`);
  }
}

/** A key prefix is non-empty and holds no braces (they would break the `{queue}` hash tag). */
export function assertPrefix(prefix: unknown): asserts prefix is string {
  if (typeof prefix !== 'string' || prefix.length === 0 || /[{}]/.test(prefix)) {
    throw new EchoMQOptionError('prefix', `must be a non-empty string without "{" or "}", got ${describe(prefix)}`);
  }
}

/**
 * A custom job id holds no `:`, is not a plain integer (those are the id counter's) and is none of
 * the queue's own key names (PROTOCOL.md L1).
 */
export function assertCustomJobId(jobId: unknown): asserts jobId is string {
  if (typeof jobId !== 'string' || jobId.length === 0) {
    throw new EchoMQOptionError('jobId', `must be a non-empty string, got ${describe(jobId)}`);
  }
  if (jobId.length > MAX_JOB_ID_LENGTH) {
    throw new EchoMQOptionError('jobId', `is ${jobId.length} characters long; at most ${MAX_JOB_ID_LENGTH} are allowed`);
  }
  if (jobId.includes(':')) {
    throw new EchoMQOptionError('jobId', `"${jobId}" holds ":", which separates key parts`);
  }
  if (/^\d+$/.test(jobId)) {
    throw new EchoMQOptionError('jobId', `"${jobId}" is a plain integer, which is reserved for automatic ids; add a letter, e.g. "order-${jobId}"`);
  }
  if (RESERVED.has(jobId)) {
    throw new EchoMQOptionError('jobId', `"${jobId}" is the name of one of the queue's own keys`);
  }
}

/**
 * A deduplication id is a non-empty string of at most 400 characters. Any character may be in it
 * (`:` included): its key is `P:{Q}:de:<id>`, and nothing else of the queue is named `de:...`.
 */
export function assertDeduplicationId(id: unknown, field = 'deduplicationId'): asserts id is string {
  if (typeof id !== 'string' || id.length === 0) {
    throw new EchoMQOptionError(field, `must be a non-empty string, got ${describe(id)}`);
  }
  if (id.length > MAX_DEDUPLICATION_ID_LENGTH) {
    throw new EchoMQOptionError(field, `is ${id.length} characters long; at most ${MAX_DEDUPLICATION_ID_LENGTH} are allowed`);
  }
}

/** A short description of a value for an error message. */
export function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? value.slice(0, 40) + '…' : value);
  if (typeof value === 'bigint') return `${value}n (a BigInt)`;
  if (typeof value === 'function') return 'a function';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  return String(value);
}
