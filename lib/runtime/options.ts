import { EchoMQOptionError } from '../protocol/errors.js';
import { assertCustomJobId, assertPrefix, describe } from '../protocol/names.js';
import { DEFAULT_PREFIX } from '../protocol/keys.js';
import { assertPartitionKey, resolvePartitions } from '../protocol/partitions.js';
import type { RateLimit } from '../protocol/scripts.js';
import type { ConnectionInput } from './connection.js';
import { DEFAULT_MAX_DATA_BYTES } from './queue/serialize.js';
import { MAX_TIMER_MS } from './sleeper.js';

/** How long to wait before each retry of a failed job. */
export type BackoffOptions =
  | number
  | { type: 'fixed' | 'exponential'; delay: number };

/** Keep finished jobs: true removes at once, a number keeps the newest N, `{ age, count }` by age (seconds) and count. */
export type KeepJobs = boolean | number | { age?: number; count?: number };

export interface JobOptions {
  /** A custom id: no ":", not a plain integer. Adding an id that exists returns the existing job. */
  jobId?: string;
  /** Milliseconds before the job becomes ready. Default 0. */
  delay?: number;
  /** 1 (highest) to 2,097,151; jobs without a priority run before prioritized ones. Default none. */
  priority?: number;
  /** Total attempts, the first included. Default 1. */
  attempts?: number;
  /** Delay between attempts: ms (fixed), or `{ type: 'fixed' | 'exponential', delay }`. Default 0. */
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
   * partition and run in the order they were added. Without it a job goes by its jobId, else round-robin.
   */
  partitionKey?: string;
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
  /** At most `max` jobs per `duration` ms across all workers of the queue. */
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
  partitions: number;
  partitionConcurrency: number;
  concurrency: number;
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
    partitions: resolvePartitions(opts.partitions),
    partitionConcurrency: partitionConcurrencyOf(opts),
    concurrency: positiveInt(opts.concurrency, 'concurrency', DEFAULTS.concurrency),
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
  };
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
}

export function resolveQueueOptions(opts: QueueOptions = {}): ResolvedQueueOptions {
  const defaultJobOptions = opts.defaultJobOptions ?? {};
  if ((defaultJobOptions as JobOptions | null)?.jobId !== undefined) {
    throw new EchoMQOptionError('defaultJobOptions.jobId', 'would give every job of the queue the same id, so every add after the first would return that one job; pass jobId to add() instead');
  }
  validateJobOptions(defaultJobOptions, 'defaultJobOptions.');
  return {
    prefix: prefixOf(opts.prefix),
    partitions: resolvePartitions(opts.partitions),
    defaultJobOptions,
    maxEvents: positiveInt(opts.maxEvents, 'maxEvents', DEFAULTS.maxEvents),
    maxDataSize: positiveInt(opts.maxDataSize, 'maxDataSize', DEFAULTS.maxDataSize),
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
}

function validateBackoff(backoff: BackoffOptions, field: string): void {
  if (typeof backoff === 'number') {
    nonNegativeInt(backoff, field, 0);
    return;
  }
  if (typeof backoff !== 'object' || backoff === null) {
    throw new EchoMQOptionError(field, `must be a number of ms or { type, delay }, got ${describe(backoff)}`);
  }
  if (backoff.type !== 'fixed' && backoff.type !== 'exponential') {
    throw new EchoMQOptionError(`${field}.type`, `is ${describe(backoff.type)}; use "fixed" or "exponential"`);
  }
  nonNegativeInt(backoff.delay, `${field}.delay`, 0);
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

/** The wait before retry number `attemptsMade` (1 after the first failure). */
export function backoffDelay(backoff: BackoffOptions | undefined, attemptsMade: number): number {
  if (backoff === undefined) return 0;
  if (typeof backoff === 'number') return backoff;
  if (backoff.type === 'fixed') return backoff.delay;
  return Math.round(backoff.delay * 2 ** Math.max(0, attemptsMade - 1));
}
