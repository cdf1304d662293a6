// bench/locks: what the heartbeat costs a worker holding 100, 1,000 and 10,000 jobs.
// One LockManager tick (extendLocks-1, chunked, one pipelined round trip) beside the same jobs
// renewed with one extendLock-2 per job. On a private redis-server, so INFO commandstats and
// INFO cpu count only this process's commands.
//   npm run bench:locks            (builds dist/, then: node --expose-gc bench/locks.mjs)
import { Redis } from 'ioredis';
import { Keys, LockManager } from '../dist/lib/index.js';
import { Scripts } from '../dist/lib/internal.js';
import { startRedis } from '../test/support/redis-process.js';
import { snapshot } from './redis-meter.mjs';

const SIZES = [100, 1_000, 10_000];
const TICKS = 5;
const LOCK_DURATION = 60_000;
const RENEW_EVERY = 400; // short, so the bench runs quickly; the timer is the real one

async function serverReading(admin) {
  const { cpuSeconds, calls } = await snapshot(admin);
  return { cpuMs: cpuSeconds * 1000, evalsha: calls.evalsha ?? 0, get: calls.get ?? 0 };
}

function heapUsed() {
  for (let i = 0; i < 4; i++) global.gc?.({ type: 'major', execution: 'sync' });
  return process.memoryUsage().heapUsed;
}

/** N jobs in active with live locks, as a worker that picked them up leaves them. */
async function seed(client, keys, n, label) {
  const pipeline = client.pipeline();
  const pairs = [];
  for (let i = 0; i < n; i++) {
    const jobId = `${label}-${i}`;
    const token = `token-${label}-${i}`;
    pairs.push([jobId, token]);
    pipeline.set(keys.lock(jobId), token, 'PX', LOCK_DURATION);
    pipeline.sadd(keys.stalled, jobId);
  }
  await pipeline.exec();
  return pairs;
}

async function batched(client, admin, n) {
  const queue = `bench-locks-${n}`;
  const keys = new Keys(queue);
  const scripts = new Scripts(client, keys, 1000);
  const pairs = await seed(client, keys, n, 'b');
  await scripts.extendLock('warm', 'x', 1); // loads the scripts' digests; not counted
  const lockManager = new LockManager();
  const locks = lockManager.register({ workerId: 'bench', queue, scripts, lockDuration: LOCK_DURATION, lockRenewTime: RENEW_EVERY, heartbeatLateThreshold: 10_000 });
  const handles = pairs.map(([jobId, token]) => locks.track(jobId, token, 1));
  const ticks = [];
  await new Promise((resolve) => {
    const sub = lockManager.renewed$.subscribe((tick) => {
      ticks.push(tick);
      if (ticks.length === 1) void serverReading(admin).then((r) => (ticks.start = r));
      if (ticks.length === TICKS + 1) { sub.unsubscribe(); resolve(); }
    });
  });
  const end = await serverReading(admin);
  const start = ticks.start;
  const measured = ticks.slice(1);
  for (const handle of handles) handle.release('completed');
  await lockManager.close();
  if (measured.some((t) => t.jobIds.length !== n)) throw new Error('a tick did not renew every job');
  return {
    mode: 'extendLocks-1 (LockManager)', n,
    roundTrips: 1,
    evalsha: (end.evalsha - start.evalsha) / TICKS,
    cpuMs: (end.cpuMs - start.cpuMs) / TICKS,
    tickMs: median(measured.map((t) => t.tickMs)),
    timers: 1,
  };
}

async function perJob(client, admin, n) {
  const keys = new Keys(`bench-lock-${n}`);
  const scripts = new Scripts(client, keys, 1000);
  const pairs = await seed(client, keys, n, 's');
  await scripts.extendLock('warm', 'x', 1);
  const start = await serverReading(admin);
  const durations = [];
  for (let t = 0; t < TICKS; t++) {
    const began = performance.now();
    // The best case for one call per job: all of them in flight at once.
    const renewed = await Promise.all(pairs.map(([jobId, token]) => scripts.extendLock(jobId, token, LOCK_DURATION)));
    durations.push(performance.now() - began);
    if (renewed.some((ok) => !ok)) throw new Error('a per-job renewal failed');
  }
  const end = await serverReading(admin);
  return {
    mode: 'extendLock-2 per job', n,
    roundTrips: n,
    evalsha: (end.evalsha - start.evalsha) / TICKS,
    cpuMs: (end.cpuMs - start.cpuMs) / TICKS,
    tickMs: median(durations),
    timers: undefined,
  };
}

/** Heap bytes per tracked job: 50,000 jobs tracked (no tick fires), three runs, the median. */
function heapPerTrackedJob(client) {
  const n = 50_000;
  const scripts = new Scripts(client, new Keys('bench-heap'), 1000);
  const runs = [];
  for (let run = 0; run < 3; run++) {
    const lockManager = new LockManager();
    const locks = lockManager.register({ workerId: `heap-${run}`, queue: 'bench-heap', scripts, lockDuration: LOCK_DURATION, lockRenewTime: LOCK_DURATION - 1, heartbeatLateThreshold: 10_000 });
    const ids = Array.from({ length: n }, (_, i) => [`h-${i}`, `token-h-${i}`]);
    const before = heapUsed();
    const handles = ids.map(([jobId, token]) => locks.track(jobId, token, 1));
    runs.push((heapUsed() - before) / n);
    for (const handle of handles) handle.release('completed');
    void lockManager.close();
  }
  return median(runs);
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

function table(rows) {
  const head = ['jobs', 'renewal', 'round trips/tick', 'EVALSHA/tick', 'Redis CPU ms/tick', 'tick ms (median)'];
  const body = rows.map((r) => [
    r.n.toLocaleString('en'), r.mode, String(r.roundTrips), r.evalsha.toFixed(0), r.cpuMs.toFixed(2), r.tickMs.toFixed(1),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((row) => row[i].length)));
  const line = (cells) => `| ${cells.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  return [line(head), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...body.map(line)].join('\n');
}

const redis = await startRedis();
const client = new Redis(redis.url, { maxRetriesPerRequest: null });
const admin = new Redis(redis.url);
try {
  if (!global.gc) console.warn('run with node --expose-gc for the heap figures');
  const rows = [];
  for (const n of SIZES) {
    rows.push(await batched(client, admin, n));
    rows.push(await perJob(client, admin, n));
  }
  console.log(`lockDuration ${LOCK_DURATION} ms, ${TICKS} ticks measured per row, Node ${process.version}, private redis-server on port ${redis.port}\n`);
  console.log(table(rows));
  const heap = heapPerTrackedJob(client);
  console.log(`\nNode heap per tracked job (LockManager entry, its AbortController and signal): ${heap.toFixed(0)} bytes; timers per worker: 1`);
} finally {
  client.disconnect();
  admin.disconnect();
  await redis.stop();
}
