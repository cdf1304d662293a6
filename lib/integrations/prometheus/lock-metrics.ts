import { Counter, Gauge, Histogram, register as globalRegistry, type Registry } from 'prom-client';
import type { Subscription } from 'rxjs';
import { EchoMQOptionError } from '../../protocol/errors.js';
import { describe } from '../../protocol/names.js';
import type { LockManager } from '../../runtime/locks/lock-manager.js';

/** How collectLockMetrics registers its metrics. */
export interface LockMetricsOptions {
  /** The prom-client registry. Default prom-client's global `register`. */
  registry?: Registry;
  /** Put before every metric name. Default `echomq_`. */
  prefix?: string;
  /** The renewal round trip histogram's buckets, in seconds. Default 1 ms to 5 s. */
  renewalBuckets?: number[];
}

/** What collectLockMetrics hands back: stop() unsubscribes and removes its metrics from the registry. */
export interface LockMetrics {
  stop(): void;
}

/** From a LAN round trip (~1 ms) to one that eats a default lockRenewTime (15 s) margin. */
const RENEWAL_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

const METRIC_PREFIX = /^[a-zA-Z_:][a-zA-Z0-9_:]*$|^$/;

/**
 * Registers prom-client metrics for a LockManager (a Nest app's: `app.get(LockManager)`):
 *
 * - `echomq_lock_jobs_held{queue}` (gauge): jobs whose locks it holds, read at scrape time;
 * - `echomq_lock_renewal_round_trip_seconds{queue}` (histogram): each heartbeat tick's extendLocks round trip;
 * - `echomq_lock_heartbeat_late_total{queue}` (counter): ticks that fired late (a blocked event loop);
 * - `echomq_lock_lost_total{queue,code}` (counter): jobs whose lock a renewal found gone (-2) or taken (-6);
 * - `echomq_lock_heartbeat_errors_total{queue}` (counter): ticks that could not reach Redis.
 *
 * It listens to the per-tick observables only (renewed$, heartbeatLate$, renewalFailed$,
 * heartbeatError$), never the per-job ones, and reads the jobs held when scraped: a worker pays
 * nothing per job for it.
 */
export function collectLockMetrics(lockManager: LockManager, options: LockMetricsOptions = {}): LockMetrics {
  const registry = options.registry ?? globalRegistry;
  const prefix = options.prefix ?? 'echomq_';
  if (typeof prefix !== 'string' || !METRIC_PREFIX.test(prefix)) throw new EchoMQOptionError('prefix', `must start a Prometheus metric name (letters, digits, _ and :), got ${describe(prefix)}`);
  const buckets = options.renewalBuckets ?? RENEWAL_BUCKETS;
  if (!Array.isArray(buckets) || buckets.length === 0 || buckets.some((b) => typeof b !== 'number' || !(b > 0))) {
    throw new EchoMQOptionError('renewalBuckets', `must be a non-empty array of seconds above 0, got ${describe(buckets)}`);
  }
  const registers = [registry];
  const held = new Gauge({
    name: `${prefix}lock_jobs_held`,
    help: 'Jobs whose locks the LockManager holds and renews',
    labelNames: ['queue'],
    registers,
    collect() {
      this.reset(); // a queue whose workers left reads as gone, not as its last count
      for (const [queue, count] of lockManager.trackedByQueue()) this.set({ queue }, count);
    },
  });
  const roundTrip = new Histogram({
    name: `${prefix}lock_renewal_round_trip_seconds`,
    help: 'Round trip of one heartbeat tick\'s lock renewals (extendLocks), seconds',
    labelNames: ['queue'],
    buckets,
    registers,
  });
  const late = new Counter({ name: `${prefix}lock_heartbeat_late_total`, help: 'Heartbeat ticks that fired late', labelNames: ['queue'], registers });
  const lost = new Counter({
    name: `${prefix}lock_lost_total`,
    help: 'Jobs whose lock a renewal found lapsed (code -2) or held by another token (code -6)',
    labelNames: ['queue', 'code'],
    registers,
  });
  const errors = new Counter({ name: `${prefix}lock_heartbeat_errors_total`, help: 'Heartbeat ticks that could not reach Redis', labelNames: ['queue'], registers });
  const subscriptions: Subscription[] = [
    lockManager.renewed$.subscribe(({ queue, roundTripMs }) => roundTrip.observe({ queue }, roundTripMs / 1000)),
    lockManager.heartbeatLate$.subscribe(({ queue }) => late.inc({ queue })),
    lockManager.renewalFailed$.subscribe(({ queue, code }) => lost.inc({ queue, code: String(code) })),
    lockManager.heartbeatError$.subscribe(({ queue }) => errors.inc({ queue })),
  ];
  let stopped = false;
  return {
    stop() {
      if (stopped) return;
      stopped = true;
      for (const subscription of subscriptions) subscription.unsubscribe();
      for (const metric of [held, roundTrip, late, lost, errors]) registry.removeSingleMetric((metric as unknown as { name: string }).name);
    },
  };
}
