import { EchoMQOptionError } from '../../protocol/errors.js';
import { describe } from '../../protocol/names.js';
import { assertMaxDataPoints } from '../../protocol/metrics.js';
import { resolvePartitions } from '../../protocol/partitions.js';
import type { RateLimit } from '../../protocol/script-shapes.js';
import type { ConnectionInput } from '../core/connection.js';
import { DEFAULTS } from '../core/defaults.js';
import type { Job } from '../job/job.js';
import { assertRenewBelowLock, nonNegativeInt, positiveInt, positiveNumber, prefixOf, timeoutOf } from '../core/option-numbers.js';
import type { WorkerThreadsOptions } from '../sandbox/sandbox-options.js';
import type { LockManager } from '../locks/lock-manager.js';
import { MAX_TIMER_MS } from '../core/sleeper.js';
import { telemetryOf, type Telemetry } from '../core/telemetry.js';

// A Worker's options and their one check (resolveWorkerOptions), where they enter.

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

/** A Worker's options as its constructor takes them. */
export interface WorkerConstructorOptions extends WorkerOptions {
  /** The LockManager that owns this worker's heartbeat; by default one of its own. */
  lockManager?: LockManager;
}

/**
 * The sandbox options with a function: they would be ignored without a word (the function runs in
 * process), so they are refused, naming the field. Nest passes them only for a @Processor's sandbox.
 */
export function refuseSandboxOptions(opts: WorkerConstructorOptions): void {
  for (const field of ['useWorkerThreads', 'sandboxGracePeriod', 'workerThreadsOptions'] as const) {
    if (opts[field] !== undefined) {
      throw new EchoMQOptionError(field, 'applies to a processor file run in sandboxes (its path or URL in place of the function); this worker runs a function, in process: remove it, or give the file');
    }
  }
}
