import { EchoMQOptionError } from './errors.js';
import type { Keys } from './keys.js';
import { describe } from './names.js';
import type { RedisClient } from './script.js';
import { SCRIPTS } from './script-registry.js';

/** The finishes metrics count (BullMQ's MetricsTime names the same two). */
export type MetricsType = 'completed' | 'failed';

/** A queue's per-minute metrics of one type (BullMQ's shape): `data` newest minute first. */
export interface Metrics {
  meta: {
    /** Every job counted since the keys were made. */
    count: number;
    /** The start (ms) of the minute still open: its count is `count - prevCount`, not yet in `data`. */
    prevTS: number;
    /** `count` when that minute opened. */
    prevCount: number;
  };
  /** Jobs per closed minute, the newest first, `start` to `end` of the list. */
  data: number[];
  /** How many closed minutes the list holds. */
  count: number;
}

export const MINUTE_MS = 60_000;
/** The most minutes a worker may ask to keep: 8 weeks (BullMQ's MetricsTime.ONE_MONTH is 80,640 too). */
export const MAX_METRICS_DATA_POINTS = 80_640;

/** Checks `metrics.maxDataPoints`: a whole number of minutes from 1 to MAX_METRICS_DATA_POINTS. */
export function assertMaxDataPoints(value: unknown, field = 'metrics.maxDataPoints'): number {
  if (!Number.isInteger(value) || (value as number) < 1 || (value as number) > MAX_METRICS_DATA_POINTS) {
    throw new EchoMQOptionError(field, `must be a whole number of minutes from 1 to ${MAX_METRICS_DATA_POINTS}, got ${describe(value)}`);
  }
  return value as number;
}

/** recordMetrics-2: adds `jobs` finishes of `minuteStart` (a multiple of 60,000) to the queue's metrics of `type`. */
export async function recordMetrics(
  client: RedisClient, keys: Keys, type: MetricsType, jobs: number, minuteStart: number, maxDataPoints: number,
): Promise<number> {
  const { meta, data } = keys.metrics(type);
  return Number(await SCRIPTS.recordMetrics.run(client, [meta, data], [jobs, minuteStart, maxDataPoints]));
}

/** Reads the metrics of one type in one MULTI (one moment): meta, the list's `start`..`end`, its length. */
export async function readMetrics(client: RedisClient, keys: Keys, type: MetricsType, start: number, end: number): Promise<Metrics> {
  const { meta, data } = keys.metrics(type);
  const replies = (await client.multi().hmget(meta, 'count', 'prevTS', 'prevCount').lrange(data, start, end).llen(data).exec()) ?? [];
  for (const [error] of replies) if (error) throw error;
  const [count, prevTS, prevCount] = (replies[0][1] as Array<string | null>).map((v) => Number(v ?? 0));
  return {
    meta: { count, prevTS, prevCount },
    data: (replies[1][1] as string[]).map((v) => Number(v)),
    count: replies[2][1] as number,
  };
}

/** Every job counted so far of each type (`meta.count`, 0 without metrics), in one pipelined round trip. */
export async function readMetricsTotals(client: RedisClient, keys: Keys): Promise<Record<MetricsType, number>> {
  const replies = (await client.pipeline().hget(keys.metrics('completed').meta, 'count').hget(keys.metrics('failed').meta, 'count').exec()) ?? [];
  for (const [error] of replies) if (error) throw error;
  const [completed, failed] = replies.map(([, value]) => Number(value ?? 0));
  return { completed, failed };
}
