import { EchoMQOptionError } from '../../protocol/errors.js';
import { assertCustomJobId, assertDeduplicationId, describe } from '../../protocol/names.js';
import { assertPartitionKey } from '../../protocol/partitions.js';
import { DEFAULTS } from './defaults.js';
import { nonNegativeInt, positiveInt, timeoutOf } from './option-numbers.js';
import { validateJobTelemetry, type JobTelemetryOptions } from './telemetry.js';

// A job's options (add, addBulk, a flow's jobs, a queue's defaultJobOptions): their types, their one
// check (validateJobOptions), and the rules the scripts take from them (keepRule, backoffDelay).

/** What a child of a flow asks of its parent when it fails for good (BullMQ's names). With none, the parent waits. */
export interface ParentFailureOptions {
  /** The parent fails at once, its failedReason naming this child. */
  failParentOnFailure?: boolean;
  /** The parent goes on as if this child had completed; getDependencies() lists it under `ignored`. */
  ignoreDependencyOnFailure?: boolean;
  /** The parent forgets this child: it is no dependency any more. */
  removeDependencyOnFailure?: boolean;
  /** The parent starts at once, while its other children still run. */
  continueParentOnFailure?: boolean;
}

/** A job's parent as add() takes it (BullMQ's shape): its id and its queue's key, `P:{Q}` (job.queueQualifiedName). */
export interface ParentOptions {
  id: string;
  queue: string;
}

/** How long to wait before each retry of a failed job: ms (a fixed wait), or a backoff type with its settings. */
export type BackoffOptions =
  | number
  | {
      /**
       * 'fixed', 'exponential' (delay × 2^(attemptsMade − 1)), or the name of a custom type, which the
       * worker's `settings.backoffStrategy` resolves.
       */
      type: 'fixed' | 'exponential' | (string & {});
      /** ms: the fixed wait, or the first of the exponential ones. Default 0. */
      delay?: number;
      /**
       * 0 to 1: each wait is shortened at random by up to this fraction of it, so jobs that failed
       * together do not all come back together. Default 0 (no jitter).
       */
      jitter?: number;
    };

/** Keep finished jobs: true removes at once, a number keeps the newest N, `{ age, count }` by age (seconds) and count. */
export type KeepJobs = boolean | number | { age?: number; count?: number };

/**
 * Deduplication (BullMQ's name and shape; docs/deduplication.md). An add whose `id` is held is
 * dropped: add() returns the job that holds it, and QueueEvents emits `deduplicated`.
 * - no ttl (simple mode): held while its job has not completed or failed;
 * - ttl (throttle mode): held for ttl ms after the add that took it, whatever became of its job;
 * - ttl with extend and/or replace (debounce mode): extend starts the ttl again at every dropped
 *   add; replace removes the holding job while it is still delayed and adds this one in its place.
 */
export interface DeduplicationOptions {
  /** Non-empty, at most 400 characters. Adds with one id are one job while the id is held. */
  id: string;
  /** ms the id is held after the add that took it (a whole number above 0). Default: until its job finishes. */
  ttl?: number;
  /** Each dropped add starts the ttl again. Needs ttl. Default false. */
  extend?: boolean;
  /** An add while the holding job is still delayed removes that job and is added in its place. Needs ttl. Default false. */
  replace?: boolean;
}

const DEDUPLICATION_OPTIONS = new Set(['id', 'ttl', 'extend', 'replace']);

export interface JobOptions extends ParentFailureOptions {
  /**
   * Makes the job a child of a job of another queue (or this one), which then waits for it (BullMQ's
   * shape): `{ id, queue }`, queue being the parent's job.queueQualifiedName (`emq:{name}`). The
   * parent must exist; a running parent waits with job.moveToWaitingChildren (docs/flows.md,
   * "Step jobs"). Not on a partitioned queue. The four failure options apply with it.
   */
  parent?: ParentOptions;
  /** A custom id: no ":", not a plain integer. Adding an id that exists returns the existing job. */
  jobId?: string;
  /** Milliseconds before the job becomes ready. Default 0. */
  delay?: number;
  /** 1 (highest) to 2,097,151; jobs without a priority run before prioritized ones. Default none. */
  priority?: number;
  /** Total attempts, the first included. Default 1. */
  attempts?: number;
  /**
   * Delay between attempts: ms (fixed), or `{ type, delay, jitter }` with type 'fixed', 'exponential'
   * or a custom type the worker's `settings.backoffStrategy` resolves. Default 0.
   */
  backoff?: BackoffOptions;
  /** Take this job before older ones. Default false. */
  lifo?: boolean;
  /** What to keep of completed jobs. Default: keep all. */
  removeOnComplete?: KeepJobs;
  /** What to keep of failed jobs. Default: keep all. */
  removeOnFail?: KeepJobs;
  /** Keep at most this many log lines per job (0 = all). Default 0. */
  keepLogs?: number;
  /**
   * The largest data of this job, in bytes of JSON (BullMQ's name): an add whose data is larger is
   * refused. The queue's maxDataSize bounds every job; this bounds one more tightly.
   */
  sizeLimit?: number;
  /**
   * A partitioned queue's routing key (ours; BullMQ has no partitions): jobs of one key go to one
   * partition and run in the order they were added. Without it a job goes by its deduplication id,
   * else its jobId, else round-robin.
   */
  partitionKey?: string;
  /** Drop adds of a job already there (BullMQ's shape): see DeduplicationOptions. */
  deduplication?: DeduplicationOptions;
  /**
   * The longest one attempt may run, ms (Bull's name). Past it the handler's signal aborts with a
   * JobTimeoutError, the attempt fails with that reason and is retried per attempts and backoff; a
   * result the handler gives later is refused (a sandbox is killed). Default: the worker's
   * `jobTimeout`, else none.
   */
  timeout?: number;
  /**
   * Tracing (BullMQ's shape): `metadata`, the trace context the job carries to its worker (a Queue
   * or FlowProducer with `telemetry` sets it); `omitContext: true` adds the job without one.
   * docs/observability.md, "OpenTelemetry".
   */
  telemetry?: JobTelemetryOptions;
}

/** BullMQ's name for JobOptions: code moved from BullMQ compiles as it is. */
export type JobsOptions = JobOptions;

/** Checks every job option; throws EchoMQOptionError naming the first that is wrong. */
export function validateJobOptions(opts: JobOptions, at = ''): void {
  if (typeof opts !== 'object' || opts === null) throw new EchoMQOptionError(`${at}opts`, `must be an object, got ${describe(opts)}`);
  if (opts.jobId !== undefined) assertCustomJobId(opts.jobId);
  nonNegativeInt(opts.delay, `${at}delay`, 0);
  if (opts.priority !== undefined) {
    const priority = nonNegativeInt(opts.priority, `${at}priority`, 0);
    if (priority > DEFAULTS.maxPriority) throw new EchoMQOptionError(`${at}priority`, `is ${priority}; the highest allowed is ${DEFAULTS.maxPriority}`);
  }
  positiveInt(opts.attempts, `${at}attempts`, 1);
  if (opts.backoff !== undefined) validateBackoff(opts.backoff, `${at}backoff`);
  nonNegativeInt(opts.keepLogs, `${at}keepLogs`, 0);
  positiveInt(opts.sizeLimit, `${at}sizeLimit`, 1);
  assertPartitionKey(opts.partitionKey, `${at}partitionKey`);
  validateKeep(opts.removeOnComplete, `${at}removeOnComplete`);
  validateKeep(opts.removeOnFail, `${at}removeOnFail`);
  if (opts.deduplication !== undefined) validateDeduplication(opts.deduplication, `${at}deduplication`);
  if (opts.timeout !== undefined) timeoutOf(opts.timeout, `${at}timeout`);
  if (opts.telemetry !== undefined) validateJobTelemetry(opts.telemetry, `${at}telemetry`);
}

function validateDeduplication(dedup: DeduplicationOptions, field: string): void {
  if (typeof dedup !== 'object' || dedup === null || Array.isArray(dedup)) {
    throw new EchoMQOptionError(field, `must be an object { id, ttl?, extend?, replace? }, got ${describe(dedup)}`);
  }
  for (const key of Object.keys(dedup)) {
    if (!DEDUPLICATION_OPTIONS.has(key)) throw new EchoMQOptionError(`${field}.${key}`, 'is not an option of deduplication (id, ttl, extend, replace)');
  }
  assertDeduplicationId(dedup.id, `${field}.id`);
  positiveInt(dedup.ttl, `${field}.ttl`, 1);
  if (dedup.ttl !== undefined && !Number.isSafeInteger(dedup.ttl)) {
    throw new EchoMQOptionError(`${field}.ttl`, `is ${dedup.ttl}; the longest is ${Number.MAX_SAFE_INTEGER} ms`);
  }
  for (const flag of ['extend', 'replace'] as const) {
    const value = dedup[flag];
    if (value === undefined) continue;
    if (typeof value !== 'boolean') throw new EchoMQOptionError(`${field}.${flag}`, `must be true or false, got ${describe(value)}`);
    if (value && dedup.ttl === undefined) {
      throw new EchoMQOptionError(`${field}.${flag}`, 'needs a ttl: without one the id is held until its job finishes, with no time to extend or job to replace');
    }
  }
}

function validateBackoff(backoff: BackoffOptions, field: string): void {
  if (typeof backoff === 'number') {
    nonNegativeInt(backoff, field, 0);
    return;
  }
  if (typeof backoff !== 'object' || backoff === null) {
    throw new EchoMQOptionError(field, `must be a number of ms or { type, delay }, got ${describe(backoff)}`);
  }
  // Any other name is a custom type: only a worker knows its strategy, so it is checked when a job fails.
  if (typeof backoff.type !== 'string' || backoff.type === '') {
    throw new EchoMQOptionError(`${field}.type`, `is ${describe(backoff.type)}; use "fixed", "exponential" or the name of a custom type the worker's settings.backoffStrategy resolves`);
  }
  nonNegativeInt(backoff.delay, `${field}.delay`, 0);
  const jitter = backoff.jitter;
  if (jitter !== undefined && (typeof jitter !== 'number' || !(jitter >= 0 && jitter <= 1))) {
    throw new EchoMQOptionError(`${field}.jitter`, `must be a number from 0 to 1 (the largest fraction of each wait taken off at random), got ${describe(jitter)}`);
  }
}

function validateKeep(keep: KeepJobs | undefined, field: string): void {
  if (keep === undefined || typeof keep === 'boolean') return;
  if (typeof keep === 'number') {
    nonNegativeInt(keep, field, 0);
    return;
  }
  if (typeof keep !== 'object' || keep === null) {
    throw new EchoMQOptionError(field, `must be true, false, a count or { age, count }, got ${describe(keep)}`);
  }
  nonNegativeInt(keep.age, `${field}.age`, 0);
  nonNegativeInt(keep.count, `${field}.count`, 0);
}

/** The keep rule as moveToFinished-14 takes it: [keepCount (-1 all, 0 none), keepAgeMs (0 any)]. */
export function keepRule(keep: KeepJobs | undefined): [number, number] {
  if (keep === undefined || keep === false) return [-1, 0];
  if (keep === true) return [0, 0];
  if (typeof keep === 'number') return [keep, 0];
  return [keep.count ?? -1, (keep.age ?? 0) * 1000];
}

/**
 * The wait before retry number `attemptsMade` (1 after the first failure) by a built-in type;
 * undefined for a custom type, which the worker's settings.backoffStrategy resolves. `random`
 * draws the jitter (Math.random's range, [0, 1)).
 */
export function backoffDelay(backoff: BackoffOptions | undefined, attemptsMade: number, random: () => number = Math.random): number | undefined {
  // null too: a job another runtime wrote may carry "backoff": null for none.
  if (backoff === undefined || backoff === null) return 0;
  if (typeof backoff === 'number') return backoff;
  const delay = backoff.delay ?? 0;
  if (backoff.type === 'fixed') return jittered(delay, backoff.jitter, random);
  if (backoff.type === 'exponential') return jittered(Math.round(delay * 2 ** Math.max(0, attemptsMade - 1)), backoff.jitter, random);
  return undefined;
}

/**
 * BullMQ's jitter: a wait of `ms` with jitter j is drawn evenly from ms × (1 − j) up to ms, and
 * rounded down. Only ever shorter, so the type's own wait stays the longest a retry waits.
 */
function jittered(ms: number, jitter: number | undefined, random: () => number): number {
  if (!jitter) return ms;
  return Math.floor(ms * (1 - jitter) + random() * ms * jitter);
}

/** The most bytes of JSON a job's data may take: its own sizeLimit, within the queue's maxDataSize. */
export function dataLimitOf(opts: JobOptions, maxDataSize?: number): number | undefined {
  if (opts.sizeLimit === undefined) return maxDataSize;
  return maxDataSize === undefined ? opts.sizeLimit : Math.min(opts.sizeLimit, maxDataSize);
}
