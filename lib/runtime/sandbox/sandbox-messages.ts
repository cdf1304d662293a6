import type { Job } from '../job/job.js';
import { DelayedError } from '../core/delayed-error.js';
import { RateLimitError } from '../core/rate-limit-error.js';
import { UnrecoverableError } from '../core/unrecoverable-error.js';

/**
 * What goes between the main side and a sandbox's host (host.mjs, which documents the same shapes
 * from its side). Everything crosses as JSON, in threads as in child processes (sandbox-channel.ts).
 */

/**
 * An Error as plain data: name, message, stack, its own enumerable plain-valued properties, and its
 * cause (one level deep: the cause's own cause is dropped).
 */
export interface ErrorData {
  name: string;
  message: string;
  stack?: string;
  props?: Record<string, string | number | boolean | null>;
  cause?: ErrorData;
}

/** The fields of a Job the handler gets in the sandbox (SandboxedJob adds the methods). */
export interface JobFields {
  id: string;
  name: string;
  data: unknown;
  opts: Job['opts'];
  queueName: string;
  timestamp: number;
  attemptsStarted: number;
  attemptsMade: number;
  stalledCounter: number;
  progress: unknown;
  delay: number;
  priority: number;
  processedOn?: number;
  repeatJobKey?: string;
  deduplicationId?: string;
}

/** Main side to sandbox. */
export type ToSandbox =
  | { t: 'run'; id: number; job: JobFields; token: string }
  | { t: 'abort'; id: number; reason: ErrorData }
  | { t: 'reply'; call: number; ok: true; value: unknown }
  | { t: 'reply'; call: number; ok: false; error: ErrorData };

/** Sandbox to main side. */
export type FromSandbox =
  | { t: 'done'; id: number; ok: true; value: unknown }
  | { t: 'done'; id: number; ok: false; error: ErrorData; load?: boolean }
  | { t: 'call'; id: number; call: number; method: string; args: unknown[] }
  | { t: 'fatal'; error: ErrorData; running?: number[] };

/**
 * The key a child process's host wraps its messages in (`{ [CHILD_KEY]: jsonText }`): what else the
 * processor's code sends through the same IPC channel (process.send: PM2's @pm2/io does) is told
 * apart and dropped. A thread's host has a MessagePort of its own (sandbox-channel.ts).
 */
export const CHILD_KEY = '@echomq/sandbox';

/**
 * A message of a sandbox's host, from its JSON text, its fields checked; undefined for anything
 * else (not JSON, not an object, an unknown type, a field of the wrong kind). An error's fields are
 * made sound rather than refused (errorDataOf): the run it ends must still end.
 */
export function readFromSandbox(text: unknown): FromSandbox | undefined {
  if (typeof text !== 'string') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isRecord(value)) return undefined;
  switch (value.t) {
    case 'done':
      if (!isCount(value.id) || typeof value.ok !== 'boolean') return undefined;
      return value.ok
        ? { t: 'done', id: value.id, ok: true, value: value.value }
        : { t: 'done', id: value.id, ok: false, error: errorDataOf(value.error), load: value.load === true };
    case 'call':
      if (!isCount(value.id) || !isCount(value.call) || typeof value.method !== 'string' || !Array.isArray(value.args)) return undefined;
      return { t: 'call', id: value.id, call: value.call, method: value.method, args: value.args };
    case 'fatal':
      return { t: 'fatal', error: errorDataOf(value.error), running: Array.isArray(value.running) ? value.running.filter(isCount) : undefined };
    default:
      return undefined;
  }
}

/** ErrorData from whatever came: a name and message that are strings, props of plain values only. */
export function errorDataOf(value: unknown, withCause = true): ErrorData {
  if (!isRecord(value)) return { name: 'Error', message: String(value) };
  const name = typeof value.name === 'string' && value.name !== '' ? value.name : 'Error';
  const message = typeof value.message === 'string' ? value.message : String(value.message ?? '');
  const data: ErrorData = { name, message };
  if (typeof value.stack === 'string') data.stack = value.stack;
  if (isRecord(value.props)) {
    const props: Record<string, string | number | boolean | null> = {};
    for (const [key, item] of Object.entries(value.props)) {
      if (item === null || typeof item === 'string' || typeof item === 'number' || typeof item === 'boolean') Object.defineProperty(props, key, { value: item, enumerable: true, writable: true, configurable: true });
    }
    data.props = props;
  }
  if (withCause && value.cause !== undefined) data.cause = errorDataOf(value.cause, false);
  return data;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isCount(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) > 0;
}

/** The Job methods a handler in a sandbox may call; each runs on the main side's Job. */
export const JOB_METHODS: ReadonlySet<string> = new Set(['updateProgress', 'log', 'updateData', 'moveToDelayed', 'discard']);

/** A copy of what the handler may read of the job: plain values, cloned as they cross. */
export function jobFields(job: Job): JobFields {
  return {
    id: job.id, name: job.name, data: job.data, opts: job.opts, queueName: job.queueName, timestamp: job.timestamp,
    attemptsStarted: job.attemptsStarted, attemptsMade: job.attemptsMade, stalledCounter: job.stalledCounter,
    progress: job.progress, delay: job.delay, priority: job.priority, processedOn: job.processedOn,
    repeatJobKey: job.repeatJobKey, deduplicationId: job.deduplicationId,
  };
}

/** An error as plain data, for the other side to rebuild (a thrown non-Error becomes its String()). */
export function errorData(error: unknown, withCause = true): ErrorData {
  if (!(error instanceof Error)) return { name: 'Error', message: String(error) };
  const props: Record<string, string | number | boolean | null> = {};
  for (const [key, value] of Object.entries(error)) {
    if (value === null || typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
      Object.defineProperty(props, key, { value, enumerable: true, writable: true, configurable: true });
    }
  }
  const data: ErrorData = { name: error.name, message: error.message, stack: error.stack, props };
  if (withCause && error.cause !== undefined) data.cause = errorData(error.cause, false);
  return data;
}

/**
 * The errors the job runner tells by their class, rebuilt as that class from their name. A Map, not
 * an object literal: a name the sandbox chose (`toString`, `constructor`, `__proto__`) must not find
 * what Object.prototype has.
 */
const KNOWN: ReadonlyMap<string, new (message: string) => Error> = new Map<string, new (message: string) => Error>([
  ['UnrecoverableError', UnrecoverableError], ['DelayedError', DelayedError], ['RateLimitError', RateLimitError],
]);

/** What a RateLimitError's message gets when its run set no rate limit. */
const RATE_LIMIT_UNSET = 'RateLimitError thrown in a sandbox without rateLimit(ms) first, from the handler\'s context: failed as any error, its attempt counted, since the job given back with no limit set would run again at once';

/**
 * An error from the sandbox, rebuilt with the same name, message, stack and plain properties
 * (retryAfter...). UnrecoverableError, DelayedError and RateLimitError come back as those classes,
 * so the runner's retries treat them as it treats the same errors thrown in process. Whatever the
 * names: each property is defined as an own one (an own `__proto__` stays a property, it does not
 * become the prototype), and `name` only through its own slot.
 *
 * RateLimitError only when `rateLimited` (the run called rateLimit(ms)): given back without a
 * limit, the job would be taken again at once, again and again. Without, it is an ordinary
 * failure, whose message says so.
 */
export function rebuildError(data: ErrorData, rateLimited = true): Error {
  const unsetRateLimit = data.name === 'RateLimitError' && !rateLimited;
  const Known = unsetRateLimit ? undefined : KNOWN.get(data.name);
  const message = unsetRateLimit ? `${data.message} (${RATE_LIMIT_UNSET})` : data.message;
  const error: Error = Known ? new Known(message) : new Error(message);
  if (data.props) {
    for (const [key, value] of Object.entries(data.props)) {
      if (key !== 'name') Object.defineProperty(error, key, { value, writable: true, enumerable: true, configurable: true });
    }
  }
  // Not for an unset rate limit: the runner tells a RateLimitError by its name too (another copy of the library's).
  if (!Known && data.name !== 'Error' && !unsetRateLimit) Object.defineProperty(error, 'name', { value: data.name, configurable: true, writable: true });
  if (data.stack !== undefined) Object.defineProperty(error, 'stack', { value: data.stack, configurable: true, writable: true });
  if (data.cause !== undefined) Object.defineProperty(error, 'cause', { value: rebuildError(data.cause), configurable: true, writable: true });
  return error;
}
