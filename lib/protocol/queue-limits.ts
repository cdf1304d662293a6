import type { RateLimit } from './script-shapes.js';

/**
 * The queue-wide limits, as fields of the queue's meta hash (`P:{Q}:meta`; a partitioned queue's
 * in partition 0's). Every runtime reads and writes the same fields (docs/protocol.md, "Queue-wide
 * limits"); each is a decimal integer string.
 */
export const LIMIT_FIELDS = {
  /** Queue.setGlobalConcurrency: at most this many jobs in active across all workers. */
  concurrency: 'concurrency',
  /** Queue.setGlobalRateLimit: at most rateLimitMax pickups per rateLimitDuration ms. Set and removed together. */
  rateLimitMax: 'rateLimitMax',
  rateLimitDuration: 'rateLimitDuration',
  /** worker.rateLimit(ms): no pickup before this time (ms since the epoch, the writer's clock). */
  rateLimitedUntil: 'rateLimitedUntil',
} as const;

/** The meta fields a worker reads at start and at every heartbeat tick, in this order (one HMGET). */
export const LIMIT_FIELDS_READ = [
  LIMIT_FIELDS.concurrency, LIMIT_FIELDS.rateLimitMax, LIMIT_FIELDS.rateLimitDuration, LIMIT_FIELDS.rateLimitedUntil,
] as const;

/** What the meta hash says about the queue's limits; a field absent (or not a whole number above 0) is none. */
export interface QueueLimitValues {
  concurrency?: number;
  rateLimit?: RateLimit;
  /** 0 when no manual rate limit was ever set. */
  rateLimitedUntil: number;
}

/** Reads LIMIT_FIELDS_READ's HMGET reply. A value a person wrote by hand that is not a count is ignored, never thrown. */
export function parseLimitValues(reply: ReadonlyArray<string | null>): QueueLimitValues {
  const [concurrency, max, duration, until] = reply.map(positiveInt);
  const values: QueueLimitValues = { rateLimitedUntil: until ?? 0 };
  if (concurrency !== undefined) values.concurrency = concurrency;
  if (max !== undefined && duration !== undefined) values.rateLimit = { max, duration };
  return values;
}

function positiveInt(value: string | null | undefined): number | undefined {
  if (value === null || value === undefined || !/^\d+$/.test(value)) return undefined;
  const n = Number(value);
  return Number.isSafeInteger(n) && n > 0 ? n : undefined;
}

/**
 * The value worker.rateLimit(ms) puts in the limiter key (`SET P:{Q}:limiter <it> PX ms`): above
 * any rate-limit max, so every pickup that passes a max (moveToActive-11's ARGV[6]) takes nothing
 * and answers the key's PTTL until it expires. 2^53 - 1: still exact as a Lua number.
 */
export const MANUAL_LIMIT_COUNT = '9007199254740991';

/** One worker's entry in the worker registry (`P:{Q}:workers:<id>`, JSON). Field names are the protocol's. */
export interface WorkerInfo {
  /** The worker's id (Worker.id). */
  id: string;
  /** Its `name` option, if it has one. */
  name?: string;
  /** The host name of its machine (os.hostname()). */
  host: string;
  pid: number;
  /** Its `concurrency` option: the most jobs it runs at once. */
  concurrency: number;
  /** How many jobs it was running at its last heartbeat, with those it held ahead (its `prefetch`): up to concurrency + prefetch. */
  running: number;
  /** When it started (ms since the epoch, its clock). */
  startedAt: number;
  /** Its last heartbeat (ms since the epoch, its clock). */
  lastSeen: number;
}

/** Reads one registry entry; undefined when it is missing (it expired) or unreadable. */
export function parseWorkerInfo(json: string | null): WorkerInfo | undefined {
  if (json === null) return undefined;
  try {
    const entry = JSON.parse(json) as Partial<WorkerInfo>;
    if (typeof entry?.id !== 'string') return undefined;
    const info: WorkerInfo = {
      id: entry.id,
      host: String(entry.host ?? ''),
      pid: Number(entry.pid),
      concurrency: Number(entry.concurrency),
      running: Number(entry.running),
      startedAt: Number(entry.startedAt),
      lastSeen: Number(entry.lastSeen),
    };
    if (typeof entry.name === 'string') info.name = entry.name;
    return info;
  } catch {
    return undefined;
  }
}

/**
 * How long a registry entry outlives its worker's last heartbeat: two intervals (one late tick
 * does not drop a live worker) and a second for the round trip and clocks a little apart.
 */
export function registryTtl(lockRenewTime: number): number {
  return 2 * lockRenewTime + 1000;
}
