// bench/locks: what the heartbeat costs a worker holding 100, 1,000 and 10,000 jobs.
// One LockManager tick (extendLocks-1, chunked, one pipelined round trip) beside the same jobs
// renewed with one extendLock-2 per job. On a private redis-server, so INFO commandstats and
// INFO cpu count only this process's commands. Then the heartbeat's round trip while a
// 50,000-job addBulk runs on the connection the worker shares (as in a Nest configuration).
//   npm run bench:locks            (builds dist/, then: node --expose-gc bench/locks.mjs)
//   node bench/locks.mjs isolation (the last scenario only)
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { Keys, LockManager, Queue } from '../dist/lib/index.js';
import { Scripts } from '../dist/lib/internal.js';
import { CallBatcher } from '../dist/lib/runtime/core/call-batcher.js';
import { startRedis } from '../test/support/redis-process.js';
import { snapshot } from './redis-meter.mjs';
import { percentile } from './stats.mjs';

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
  const locks = lockManager.register({ workerId: 'bench', queue, scripts, client, lockDuration: LOCK_DURATION, lockRenewTime: RENEW_EVERY, heartbeatLateThreshold: 10_000 });
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
    const locks = lockManager.register({ workerId: `heap-${run}`, queue: 'bench-heap', scripts, client, lockDuration: LOCK_DURATION, lockRenewTime: LOCK_DURATION - 1, heartbeatLateThreshold: 10_000 });
    const ids = Array.from({ length: n }, (_, i) => [`h-${i}`, `token-h-${i}`]);
    const before = heapUsed();
    const handles = ids.map(([jobId, token]) => locks.track(jobId, token, 1));
    runs.push((heapUsed() - before) / n);
    for (const handle of handles) handle.release('completed');
    void lockManager.close();
  }
  return median(runs);
}

const PENDING_ADDS = 20_000;
const PAUSE_MS = 1_500;

/**
 * Heap bytes per pending add, two ways, each the median of three runs of 20,000:
 * - the CallBatcher alone (its entry, the caller's promise and its resolve/reject), the calls made
 *   in one turn and not yet sent, the item shared so only the batcher's part counts;
 * - a whole Queue.add in flight: the Job, its data and options, the batcher's entry, the addJobs-9
 *   call ioredis holds until Redis answers. Redis is held by CLIENT PAUSE (from another connection)
 *   so that every add is sent and none answered while the heap is read.
 */
async function heapPerPendingAdd(url, admin) {
  const batcherRuns = [];
  const item = { name: 'pending', data: { i: 0 } };
  for (let run = 0; run < 3; run++) {
    let release;
    const held = new Promise((resolve) => (release = resolve));
    const batcher = new CallBatcher(async (batch) => { await held; return batch.map(() => 1); }, PENDING_ADDS + 1, () => false);
    const before = heapUsed();
    const calls = [];
    for (let i = 0; i < PENDING_ADDS; i++) calls.push(batcher.submit(item));
    batcherRuns.push((heapUsed() - before) / PENDING_ADDS);
    release();
    await Promise.all(calls);
  }
  const addRuns = [];
  const connection = new Redis(url, { maxRetriesPerRequest: null });
  const queue = new Queue(`bench-pending-${process.pid}`, { connection });
  try {
    await queue.add('warm', { i: -1 }); // loads the scripts; not counted
    for (let run = 0; run < 3; run++) {
      const before = heapUsed();
      // CLIENT UNPAUSE would wait behind the pause too (Redis 7.0 holds every client): the pause
      // is short and ends by itself.
      await admin.client('PAUSE', String(PAUSE_MS), 'ALL');
      const calls = [];
      for (let i = 0; i < PENDING_ADDS; i++) calls.push(queue.add('pending', { i }));
      await new Promise((resolve) => setTimeout(resolve, 50)); // the batches leave the batcher for ioredis
      addRuns.push((heapUsed() - before) / PENDING_ADDS);
      await Promise.all(calls);
      calls.length = 0;
    }
  } finally {
    await queue.close();
    connection.disconnect();
  }
  return { batcher: median(batcherRuns), add: median(addRuns) };
}

const BULK = 50_000;
const ISOLATION_TICK_MS = 10;
const IDLE_SAMPLES = 60;
const BULK_RUNS = 5;

/**
 * The heartbeat round trip (renewed$ roundTripMs: the extendLocks-1 pipeline sent to its replies
 * read) of a worker holding 100 jobs, its scripts on `shared`: first 60 ticks with nothing else
 * on the connection, then every tick while five addBulk calls of 50,000 jobs run back to back on
 * that same connection.
 */
async function heartbeatBesideBulk(url) {
  const shared = new Redis(url, { maxRetriesPerRequest: null });
  const name = 'bench-isolation';
  const keys = new Keys(name);
  const scripts = new Scripts(shared, keys, 1000);
  const queue = new Queue(name, { connection: shared });
  const pairs = await seed(shared, keys, 100, 'i');
  await scripts.extendLock('warm', 'x', 1);
  const lockManager = new LockManager();
  const locks = lockManager.register({ workerId: 'bench', queue: name, scripts, client: shared, lockDuration: LOCK_DURATION, lockRenewTime: ISOLATION_TICK_MS, heartbeatLateThreshold: 60_000 });
  const handles = pairs.map(([jobId, token]) => locks.track(jobId, token, 1));
  let sink;
  lockManager.renewed$.subscribe((tick) => sink?.push(tick.roundTripMs));
  const idle = async () => {
    const rtts = (sink = []);
    while (rtts.length < IDLE_SAMPLES) await new Promise((r) => setTimeout(r, ISOLATION_TICK_MS));
    sink = undefined;
    return { rtts };
  };
  const loaded = async () => {
    const jobs = Array.from({ length: BULK }, (_, i) => ({ name: 'bulk', data: { i } }));
    const rtts = (sink = []);
    const loop = monitorEventLoopDelay({ resolution: 5 });
    loop.enable();
    const started = performance.now();
    for (let run = 0; run < BULK_RUNS; run++) await queue.addBulk(jobs);
    const bulkMs = (performance.now() - started) / BULK_RUNS;
    loop.disable();
    sink = undefined;
    return { rtts, bulkMs, loopStallMs: loop.max / 1e6 };
  };
  try {
    return { idle: await idle(), loaded: await loaded() };
  } finally {
    for (const handle of handles) handle.release('completed');
    await lockManager.close();
    await queue.close();
    shared.disconnect();
  }
}

function printIsolation({ idle, loaded }) {
  const width = 52;
  const cell = (value) => String(value).padStart(7);
  const row = (label, { rtts }) => `| ${label.padEnd(width)} | ${String(rtts.length).padStart(5)} | ${[50, 90, 99].map((p) => cell(percentile(rtts, p))).join(' | ')} | ${String(Math.max(...rtts)).padStart(6)} |`;
  console.log(`\nHeartbeat round trip (ms), 100 jobs held, a tick due every ${ISOLATION_TICK_MS} ms, the worker's scripts on one shared connection:`);
  console.log(`| ${'load on the shared connection'.padEnd(width)} | ticks | RTT p50 | RTT p90 | RTT p99 |    max |`);
  console.log(`|${'-'.repeat(width + 2)}|-------|---------|---------|---------|--------|`);
  console.log(row('none', idle));
  // The round trip includes any time the event loop was busy before it read the reply (building
  // 50,000 jobs, reading their replies): that part is the same on any connection.
  console.log(row(`${BULK_RUNS} addBulk of ${BULK.toLocaleString('en')} jobs (${Math.round(loaded.bulkMs)} ms each)`, loaded));
  console.log(`Longest event-loop stall during the addBulk calls: ${Math.round(loaded.loopStallMs)} ms (a reply read after it waits that long on any connection).`);
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

/** The renewal cost table (extendLocks-1 against extendLock-2 per job) and the heap per tracked job. */
async function costs(client, admin, port, url) {
  if (!global.gc) console.warn('run with node --expose-gc for the heap figures');
  const rows = [];
  for (const n of SIZES) {
    rows.push(await batched(client, admin, n));
    rows.push(await perJob(client, admin, n));
  }
  console.log(`lockDuration ${LOCK_DURATION} ms, ${TICKS} ticks measured per row, Node ${process.version}, private redis-server on port ${port}\n`);
  console.log(table(rows));
  const heap = heapPerTrackedJob(client);
  console.log(`\nNode heap per tracked job (LockManager entry, its AbortController and signal): ${heap.toFixed(0)} bytes; timers per worker: 1`);
  const pending = await heapPerPendingAdd(url, admin);
  console.log(`Node heap per pending add, ${PENDING_ADDS.toLocaleString('en')} at once: ${pending.batcher.toFixed(0)} bytes in the CallBatcher (its entry and the caller's promise); ${pending.add.toFixed(0)} bytes for a whole Queue.add in flight (Job, data, the batcher's entry, the addJobs-9 call ioredis holds until Redis answers)`);
}

const redis = await startRedis();
const client = new Redis(redis.url, { maxRetriesPerRequest: null });
const admin = new Redis(redis.url);
try {
  if (process.argv[2] !== 'isolation') await costs(client, admin, redis.port, redis.url);
  printIsolation(await heartbeatBesideBulk(redis.url));
} finally {
  client.disconnect();
  admin.disconnect();
  // The server's process handle is unref'd: with nothing else left, Node would end here with an
  // unsettled top-level await (exit code 13) before the server has exited.
  const alive = setInterval(() => undefined, 1000);
  await redis.stop();
  clearInterval(alive);
}
