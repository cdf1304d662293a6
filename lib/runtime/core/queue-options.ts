import { EchoMQOptionError } from '../../protocol/errors.js';
import { describe } from '../../protocol/names.js';
import { resolvePartitions } from '../../protocol/partitions.js';
import type { ConnectionInput } from './connection.js';
import { DEFAULTS } from './defaults.js';
import { validateJobOptions, type JobOptions } from './job-options.js';
import { positiveInt, prefixOf } from './option-numbers.js';
import { telemetryOf, type Telemetry } from './telemetry.js';

// The options of a Queue and of a QueueEvents, and their one check each, where they enter.

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
