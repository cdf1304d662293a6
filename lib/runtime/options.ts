import { EchoMQOptionError } from '../protocol/errors.js';
import { assertCustomJobId, assertDeduplicationId, assertPrefix, describe } from '../protocol/names.js';
import { DEFAULT_PREFIX } from '../protocol/keys.js';
import { assertMaxDataPoints } from '../protocol/metrics.js';
import { assertPartitionKey, resolvePartitions } from '../protocol/partitions.js';
import type { RateLimit } from '../protocol/scripts.js';
import type { ConnectionInput } from './connection.js';
import type { WorkerThreadsOptions } from './sandbox/sandbox-options.js';
import type { Job } from './queue/job.js';
import { DEFAULT_MAX_DATA_BYTES } from './queue/serialize.js';
import { MAX_TIMER_MS } from './sleeper.js';
import type { ParentFailureOptions } from './flows/flow-tree.js';
import type { ParentOptions } from './flows/step-jobs.js';
import { telemetryOf, validateJobTelemetry, type JobTelemetryOptions, type Telemetry } from './telemetry/telemetry.js';

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

/**
 * A worker's custom backoff: called when a job with attempts left fails and its backoff type is
 * neither 'fixed' nor 'exponential'. `attemptsMade` counts the failed attempt (1 after the first).
 * Answers the ms to wait before the retry, 0 to retry at once, or -1 to fail the job for good now;
 * it may answer with a promise.
 */
export type BackoffStrategy = (attemptsMade: number, type: string, error: Error, job: Job) => number | Promise<number>;

/** A worker's settings for the jobs it fails. */
export interface WorkerSettings {
  /** Resolves the backoff types other than 'fixed' and 'exponential' (see BackoffStrategy). */
  backoffStrategy?: BackoffStrategy;
}

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

export interface QueueOptions {
  connection?: ConnectionInput;
  /** Key prefix. Default `emq`. */
  prefix?: string;
  /** Options every job of this queue starts from. */
  defaultJobOptions?: JobOptions;
  /** The events stream keeps about this many entries. Default 10,000. */
  maxEvents?: number;
  /** Largest job data accepted, in bytes of JSON. Default 1 MiB. */
  maxDataSize?: number;
  /**
   * One queue over this many hash tags (`{name#0}` ... `{name#n-1}`), so its load spreads over a
   * Redis Cluster's masters (docs/cluster.md). Every Queue, Worker and QueueEvents of the queue
   * must give the same number. Default 1 (not partitioned).
   */
  partitions?: number;
  /**
   * Tracing (BullMQ's option): a PRODUCER span per add and addBulk, whose context each job
   * carries to its worker. `new EchoMQOtel()` from `@echomq/nestjs/otel`, or any Telemetry.
   * Default none: adds send and store exactly what they did without it.
   */
  telemetry?: Telemetry;
}

export interface QueueEventsOptions {
  connection?: ConnectionInput;
  /** Key prefix. Default `emq`. */
  prefix?: string;
  /** Longest XREAD BLOCK in ms before it is sent again. Default 10,000. */
  blockingTimeout?: number;
  /** Start reading on construction. Default true. */
  autorun?: boolean;
  /**
   * The queue's partition count, as its Queue was given it (see QueueOptions.partitions): it reads
   * every partition's events stream. Default 1.
   */
  partitions?: number;
}

export interface WorkerOptions {
  connection?: ConnectionInput;
  prefix?: string;
  /** A label for this worker in queue.getWorkers() (BullMQ's `name`; it is not stored on jobs). Default none. */
  name?: string;
  /** The queue's partition count, as its Queue was given it (see QueueOptions.partitions). Default 1. */
  partitions?: number;
  /**
   * A partitioned queue: at most this many jobs of one partition are active at once, across every
   * worker of the queue that gives the same bound (ours; BullMQ Pro calls its kind "groups"). With 1,
   * the jobs of one partitionKey run one at a time, in the order they were added (docs/cluster.md).
   * Default: no bound but concurrency. Refused on a plain queue.
   */
  partitionConcurrency?: number;
  /** Jobs processed at once. Default 1. */
  concurrency?: number;
  /**
   * Jobs held locked beyond `concurrency`, each ready to start the moment a handler ends (ours;
   * BullMQ has none): the next job's pickup then overlaps the last one's run. At most `concurrency`
   * handlers still run at once. A held job is active in Redis, renewed by the heartbeat and given
   * back to wait, unstarted, when the worker closes. For many short jobs; docs/prefetch.md says
   * what it changes. Default 0.
   */
  prefetch?: number;
  /** Lock TTL in ms. Default 30,000. */
  lockDuration?: number;
  /** Heartbeat interval in ms; below lockDuration. Default lockDuration / 2. */
  lockRenewTime?: number;
  /**
   * Demos and tests only: a heartbeat interval with no upper bound, replacing lockRenewTime. At or
   * over lockDuration every lock lapses and the job stalls (see docs/locks.md). Never in production.
   */
  unsafeLockRenewTime?: number;
  /** Stalled sweep period in ms. Default 30,000. */
  stalledInterval?: number;
  /** Stalls before a job fails for good. Default 1. */
  maxStalledCount?: number;
  /** Start processing on construction. Default true. */
  autorun?: boolean;
  /** Longest BZPOPMIN block, in seconds, while the queue is empty. Default 5. */
  drainDelay?: number;
  /**
   * At most `max` jobs per `duration` ms across all workers of the queue (per partition of a
   * partitioned queue). A rate limit set with queue.setGlobalRateLimit wins over it while it is set
   * (docs/limits.md).
   */
  limiter?: RateLimit;
  /** Warn on heartbeatLate$ when a tick fires this many ms late. Default min(1000, lockRenewTime / 4). */
  heartbeatLateThreshold?: number;
  maxEvents?: number;
  /**
   * How long close() goes on while Redis answers nothing (no reply to a PING), in ms. Past it the
   * worker gives up what is left as close(true) does (signals aborted, locks left to lapse,
   * connections dropped) and says so with an 'error' (a CloseTimeoutError). While Redis answers,
   * close() waits for running jobs however long they run. `Infinity`: no bound. Default 30,000.
   */
  closeTimeout?: number;
  /** How this worker retries: `backoffStrategy` for the jobs whose backoff type is a custom one. */
  settings?: WorkerSettings;
  /** The timeout (ms) of the jobs this worker runs whose `opts.timeout` gives none (ours). Default none. */
  jobTimeout?: number;
  /**
   * With a processor file (docs/sandbox.md): run it in worker threads (true) or in child processes
   * (false). BullMQ's name. Default false. Refused with a function (EchoMQOptionError).
   */
  useWorkerThreads?: boolean;
  /**
   * With a processor file: ms a sandbox may go on after its job's signal aborted (lock lost, job
   * cancelled or timed out) before it is killed and its job given up. Default 5,000. Refused with a
   * function (EchoMQOptionError).
   */
  sandboxGracePeriod?: number;
  /**
   * With a processor file in worker threads: `resourceLimits` of each thread (BullMQ's option name;
   * of Node's thread options only resourceLimits is taken), e.g. `{ resourceLimits: {
   * maxOldGenerationSizeMb: 256 } }`: a handler that reaches it fails its job with "ran out of
   * memory" and the process lives on. Default Node's. Refused with a function, with child processes
   * (EchoMQOptionError).
   */
  workerThreadsOptions?: WorkerThreadsOptions;
  /**
   * Per-minute counts of the jobs this worker completes and fails for good, for queue.getMetrics
   * (BullMQ's option and shape). Opt-in: counted in memory and sent about every 5 s and at close
   * with a small script of their own (docs/observability.md, "Metrics"); without it the worker
   * sends nothing more than before. `maxDataPoints`: minutes kept, 1 to 80,640. Default none.
   */
  metrics?: MetricsOptions;
  /**
   * Tracing (BullMQ's option): a CONSUMER span per attempt, child of the add that carried the job's
   * context, with lock losses as events, and a span per stall the worker's sweep finds.
   * `new EchoMQOtel()` from `@echomq/nestjs/otel`, or any Telemetry. Default none: the worker
   * then sends and allocates per job what it did without the feature.
   */
  telemetry?: Telemetry;
}

/** WorkerOptions.metrics. */
export interface MetricsOptions {
  /** Closed minutes the queue's lists keep (the newest); 1 to 80,640 (8 weeks). */
  maxDataPoints: number;
}

export const DEFAULTS = {
  prefix: DEFAULT_PREFIX,
  maxEvents: 10_000,
  maxDataSize: DEFAULT_MAX_DATA_BYTES,
  concurrency: 1,
  lockDuration: 30_000,
  stalledInterval: 30_000,
  maxStalledCount: 1,
  drainDelay: 5,
  // The usual grace a process supervisor gives a stopping process before it kills it
  // (Kubernetes' terminationGracePeriodSeconds, systemd's TimeoutStopSec are both about that).
  closeTimeout: 30_000,
  blockingTimeout: 10_000,
  // The prioritized score is priority * 2^32 + a counter; below 2^21 it stays under 2^53, an exact double.
  maxPriority: 2 ** 21 - 1,
} as const;

export interface ResolvedWorkerOptions {
  prefix: string;
  name?: string;
  partitions: number;
  partitionConcurrency: number;
  concurrency: number;
  /** Jobs held beyond concurrency (0: none). */
  prefetch: number;
  lockDuration: number;
  lockRenewTime: number;
  /** True when lockRenewTime came from unsafeLockRenewTime (locks may lapse on purpose). */
  lockRenewUnsafe: boolean;
  stalledInterval: number;
  maxStalledCount: number;
  autorun: boolean;
  drainDelay: number;
  limiter?: RateLimit;
  heartbeatLateThreshold: number;
  maxEvents: number;
  /** ms, or Infinity for no bound. */
  closeTimeout: number;
  /** settings.backoffStrategy, when given. */
  backoffStrategy?: BackoffStrategy;
  /** The timeout of jobs without opts.timeout, ms, when given. */
  jobTimeout?: number;
  /** `metrics`, when given. */
  metrics?: MetricsOptions;
  /** `telemetry`, when given. */
  telemetry?: Telemetry;
}

/** PROTOCOL.md's rule: a heartbeat at or over the lock's TTL lets every lock lapse. */
export function assertRenewBelowLock(lockDuration: number, lockRenewTime: number): void {
  if (lockRenewTime >= lockDuration) {
    throw new EchoMQOptionError('lockRenewTime', `is ${lockRenewTime} ms but must be below lockDuration (${lockDuration} ms), or every lock lapses before its renewal`);
  }
}

/** Validates worker options against PROTOCOL.md's timing rules and fills in the defaults. */
export function resolveWorkerOptions(opts: WorkerOptions = {}): ResolvedWorkerOptions {
  const lockDuration = positiveInt(opts.lockDuration, 'lockDuration', DEFAULTS.lockDuration);
  const lockRenewUnsafe = opts.unsafeLockRenewTime !== undefined;
  const lockRenewTime = lockRenewUnsafe
    ? positiveInt(opts.unsafeLockRenewTime, 'unsafeLockRenewTime', 1)
    : positiveInt(opts.lockRenewTime, 'lockRenewTime', Math.max(1, Math.floor(lockDuration / 2)));
  if (lockRenewUnsafe && opts.lockRenewTime !== undefined) {
    throw new EchoMQOptionError('unsafeLockRenewTime', 'replaces lockRenewTime; give one of the two, not both');
  }
  if (!lockRenewUnsafe) assertRenewBelowLock(lockDuration, lockRenewTime);
  const limiter = opts.limiter;
  if (limiter !== undefined) {
    positiveInt(limiter.max, 'limiter.max', 1);
    positiveInt(limiter.duration, 'limiter.duration', 1);
  }
  return {
    prefix: prefixOf(opts.prefix),
    ...workerNameOf(opts.name),
    partitions: resolvePartitions(opts.partitions),
    partitionConcurrency: partitionConcurrencyOf(opts),
    concurrency: positiveInt(opts.concurrency, 'concurrency', DEFAULTS.concurrency),
    prefetch: nonNegativeInt(opts.prefetch, 'prefetch', 0),
    lockDuration,
    lockRenewTime,
    lockRenewUnsafe,
    stalledInterval: positiveInt(opts.stalledInterval, 'stalledInterval', DEFAULTS.stalledInterval),
    maxStalledCount: nonNegativeInt(opts.maxStalledCount, 'maxStalledCount', DEFAULTS.maxStalledCount),
    autorun: opts.autorun ?? true,
    drainDelay: positiveNumber(opts.drainDelay, 'drainDelay', DEFAULTS.drainDelay),
    limiter,
    heartbeatLateThreshold: positiveNumber(opts.heartbeatLateThreshold, 'heartbeatLateThreshold', Math.min(1000, lockRenewTime / 4)),
    maxEvents: positiveInt(opts.maxEvents, 'maxEvents', DEFAULTS.maxEvents),
    closeTimeout: closeTimeoutOf(opts.closeTimeout),
    backoffStrategy: backoffStrategyOf(opts.settings),
    ...(opts.jobTimeout === undefined ? {} : { jobTimeout: timeoutOf(opts.jobTimeout, 'jobTimeout') }),
    ...(opts.metrics === undefined ? {} : { metrics: metricsOf(opts.metrics) }),
    ...(opts.telemetry === undefined ? {} : { telemetry: telemetryOf(opts.telemetry) }),
  };
}

function metricsOf(metrics: unknown): MetricsOptions {
  if (typeof metrics !== 'object' || metrics === null || Array.isArray(metrics)) {
    throw new EchoMQOptionError('metrics', `must be { maxDataPoints }, got ${describe(metrics)}`);
  }
  return { maxDataPoints: assertMaxDataPoints((metrics as MetricsOptions).maxDataPoints) };
}

/** A timeout: a whole number of ms above 0 that a timer can hold. */
function timeoutOf(value: unknown, field: string): number {
  const ms = positiveInt(value as number, field, 1);
  if (ms > MAX_TIMER_MS) throw new EchoMQOptionError(field, `is ${ms} ms; the longest is ${MAX_TIMER_MS} (about 24.8 days)`);
  return ms;
}

/** The longest worker `name`: it goes into the worker's registry entry at every heartbeat. */
const MAX_WORKER_NAME_LENGTH = 200;

/** `name`: absent, or a non-empty string of at most 200 characters. */
function workerNameOf(name: unknown): { name?: string } {
  if (name === undefined) return {};
  if (typeof name !== 'string' || name.length === 0 || name.length > MAX_WORKER_NAME_LENGTH) {
    throw new EchoMQOptionError('name', `must be a non-empty string of at most ${MAX_WORKER_NAME_LENGTH} characters, got ${describe(name)}`);
  }
  return { name };
}

/** settings.backoffStrategy: a function, when given. */
function backoffStrategyOf(settings: WorkerSettings | undefined): BackoffStrategy | undefined {
  if (settings === undefined) return undefined;
  if (typeof settings !== 'object' || settings === null) throw new EchoMQOptionError('settings', `must be an object ({ backoffStrategy }), got ${describe(settings)}`);
  const strategy = settings.backoffStrategy;
  if (strategy !== undefined && typeof strategy !== 'function') {
    throw new EchoMQOptionError('settings.backoffStrategy', `must be a function (attemptsMade, type, error, job) => ms, 0 or -1, got ${describe(strategy)}`);
  }
  return strategy;
}

/** partitionConcurrency: a whole number above 0, for a partitioned queue only; Infinity when not given. */
function partitionConcurrencyOf(opts: WorkerOptions): number {
  if (opts.partitionConcurrency === undefined) return Infinity;
  const bound = positiveInt(opts.partitionConcurrency, 'partitionConcurrency', 1);
  if (resolvePartitions(opts.partitions) === 1) {
    throw new EchoMQOptionError('partitionConcurrency', 'bounds the active jobs of each partition of a partitioned queue (partitions > 1); a plain queue has concurrency');
  }
  return bound;
}

/** A whole number of ms above 0 that a timer can hold, or Infinity. */
function closeTimeoutOf(value: number | undefined): number {
  if (value === Infinity) return value;
  const ms = positiveInt(value, 'closeTimeout', DEFAULTS.closeTimeout);
  if (ms > MAX_TIMER_MS) throw new EchoMQOptionError('closeTimeout', `is ${ms} ms; the longest is ${MAX_TIMER_MS} (about 24.8 days), or Infinity for no bound`);
  return ms;
}

export interface ResolvedQueueOptions {
  prefix: string;
  partitions: number;
  defaultJobOptions: JobOptions;
  maxEvents: number;
  maxDataSize: number;
  /** `telemetry`, when given. */
  telemetry?: Telemetry;
}

export function resolveQueueOptions(opts: QueueOptions = {}): ResolvedQueueOptions {
  const defaultJobOptions = opts.defaultJobOptions ?? {};
  if ((defaultJobOptions as JobOptions | null)?.jobId !== undefined) {
    throw new EchoMQOptionError('defaultJobOptions.jobId', 'would give every job of the queue the same id, so every add after the first would return that one job; pass jobId to add() instead');
  }
  if ((defaultJobOptions as JobOptions | null)?.deduplication !== undefined) {
    throw new EchoMQOptionError('defaultJobOptions.deduplication', 'would give every job of the queue the same deduplication id, so the queue would hold one job at a time; pass deduplication to add() instead');
  }
  validateJobOptions(defaultJobOptions, 'defaultJobOptions.');
  return {
    prefix: prefixOf(opts.prefix),
    partitions: resolvePartitions(opts.partitions),
    defaultJobOptions,
    maxEvents: positiveInt(opts.maxEvents, 'maxEvents', DEFAULTS.maxEvents),
    maxDataSize: positiveInt(opts.maxDataSize, 'maxDataSize', DEFAULTS.maxDataSize),
    ...(opts.telemetry === undefined ? {} : { telemetry: telemetryOf(opts.telemetry) }),
  };
}

export interface ResolvedQueueEventsOptions {
  prefix: string;
  partitions: number;
  blockingTimeout: number;
  autorun: boolean;
}

export function resolveQueueEventsOptions(opts: QueueEventsOptions = {}): ResolvedQueueEventsOptions {
  if (typeof opts !== 'object' || opts === null) throw new EchoMQOptionError('QueueEvents options', `must be an object, got ${describe(opts)}`);
  return {
    prefix: prefixOf(opts.prefix),
    partitions: resolvePartitions(opts.partitions),
    blockingTimeout: positiveInt(opts.blockingTimeout, 'blockingTimeout', DEFAULTS.blockingTimeout),
    autorun: opts.autorun ?? true,
  };
}

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

function prefixOf(prefix: string | undefined): string {
  if (prefix === undefined) return DEFAULTS.prefix;
  assertPrefix(prefix);
  return prefix;
}

function positiveInt(value: number | undefined, field: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value <= 0) throw new EchoMQOptionError(field, `must be a whole number above 0, got ${describe(value)}`);
  return value;
}

function nonNegativeInt(value: number | undefined, field: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 0) throw new EchoMQOptionError(field, `must be a whole number of 0 or more, got ${describe(value)}`);
  return value;
}

function positiveNumber(value: number | undefined, field: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new EchoMQOptionError(field, `must be a number above 0, got ${describe(value)}`);
  }
  return value;
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
