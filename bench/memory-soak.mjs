// bench/memory-soak: does a worker's heap grow over a long run? (issue 17: heap after GC at 100k
// and at 1M jobs within 10%). 1,000,000 no-op jobs (or --jobs N) through one EchoMQ worker at
// concurrency 50, removeOnComplete: true, added with addBulk while the worker drains, the backlog
// kept at most --backlog waiting jobs. Every 100k processed jobs (and at the end) the worker is
// paused (its active jobs finish), no add is in flight, and the heap is read after a forced GC;
// then the worker resumes. Pausing at every checkpoint, the last included, makes each reading the
// same state: queue, worker and connections idle, only what they keep between jobs.
//   npm run bench:soak                 (builds dist/, then: node --expose-gc bench/memory-soak.mjs)
//   node --expose-gc bench/memory-soak.mjs --jobs 200000
import { cpus } from 'node:os';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getHeapSpaceStatistics, writeHeapSnapshot } from 'node:v8';
import { Redis } from 'ioredis';
import { Queue, Worker } from '../dist/lib/index.js';
import { startRedis } from '../test/support/redis-process.js';

function parseArgs(argv) {
  const args = { jobs: 1_000_000, every: 100_000, batch: 1_000, backlog: 50_000, concurrency: 50 };
  for (let i = 0; i < argv.length; i++) {
    const name = argv[i].replace(/^--/, '');
    if (!(name in args) || !argv[i].startsWith('--')) throw new Error(`unknown argument ${argv[i]}; use --jobs N, --every N, --batch N, --backlog N, --concurrency N`);
    args[name] = Number(argv[++i]);
    if (!Number.isInteger(args[name]) || args[name] <= 0) throw new Error(`--${name} wants a positive integer`);
  }
  return args;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Heap used after a forced GC (global.gc() twice, a short await between for finalizers and weak
 * refs), and the heap V8 keeps after the GC a heap snapshot makes. The two differ here: after
 * gc() a run held 20 to 65 MB that went up and down from one checkpoint to the next, of which
 * the snapshot's GC frees all but about 15 MB, and the snapshot finds nothing of it reachable.
 * So the second figure is what is live; the first is what the process keeps between ordinary
 * GCs. The snapshot goes to a temp file, deleted at once (about a second a checkpoint).
 */
async function heapAfterGc() {
  global.gc({ type: 'major', execution: 'sync' });
  await sleep(50);
  global.gc({ type: 'major', execution: 'sync' });
  await sleep(250); // V8 sweeps on helper threads; read once that is done
  const { heapUsed, rss, external } = process.memoryUsage();
  // Which V8 space holds it: where to look when the heap moves.
  const spaces = Object.fromEntries(getHeapSpaceStatistics().map((s) => [s.space_name.replace(/_space$/, ''), s.space_used_size]));
  const file = join(tmpdir(), `echomq-soak-${process.pid}.heapsnapshot`);
  writeHeapSnapshot(file);
  rmSync(file, { force: true });
  const liveHeap = process.memoryUsage().heapUsed;
  return { heapUsed, liveHeap, rss, external, spaces };
}

const mb = (bytes) => (bytes / 1024 / 1024).toFixed(2);

async function main() {
  if (!global.gc) throw new Error('run with node --expose-gc (npm run bench:soak does)');
  const args = parseArgs(process.argv.slice(2));
  const redis = await startRedis();
  const connection = { host: '127.0.0.1', port: redis.port };
  const admin = new Redis(redis.url);
  const name = `soak-${process.pid}`;
  const queue = new Queue(name, { connection });
  let completed = 0;
  let failed = 0;
  let wakeCompleted;
  const worker = new Worker(name, async () => undefined, { connection, concurrency: args.concurrency, autorun: false });
  worker.on('completed', () => {
    completed++;
    wakeCompleted?.();
  });
  worker.on('failed', () => failed++);
  worker.on('error', (error) => console.error('worker error:', error.message));
  const oneMoreCompleted = () => new Promise((resolve) => {
    wakeCompleted = resolve;
    setTimeout(resolve, 20);
  });

  const readings = [];
  const checkpoint = async () => {
    await worker.pause(); // waits for its active jobs
    const heap = await heapAfterGc();
    const redisMemory = Number((await admin.info('memory')).match(/used_memory:(\d+)/)[1]);
    const { wait: waiting } = await queue.getJobCounts('wait');
    readings.push({ completed, ...heap, redisMemory, waiting, elapsedS: (performance.now() - started) / 1000 });
    const last = readings.at(-1);
    console.log(`  ${completed.toLocaleString('en').padStart(9)} jobs, ${last.elapsedS.toFixed(0)} s: heap ${mb(last.heapUsed)} MB (live ${mb(last.liveHeap)}), rss ${mb(last.rss)} MB, waiting ${waiting}; by space (MB) ${Object.entries(last.spaces).filter(([, v]) => v > 512 * 1024).map(([k, v]) => `${k} ${mb(v)}`).join(', ')}`);
    worker.resume();
  };

  console.log(`machine: ${cpus().length} CPUs, ${cpus()[0].model}; Node ${process.version}; private redis-server on port ${redis.port}`);
  console.log(`${args.jobs.toLocaleString('en')} no-op jobs, one worker at concurrency ${args.concurrency}, removeOnComplete: true, addBulk of ${args.batch}, at most ${args.backlog.toLocaleString('en')} waiting; heap after GC every ${args.every.toLocaleString('en')}\n`);
  await admin.ping();
  await worker.waitUntilReady();
  const started = performance.now();
  void worker.run();
  let added = 0;
  let nextCheckpoint = Math.min(args.every, args.jobs);
  try {
    while (completed < args.jobs) {
      if (completed >= nextCheckpoint) {
        await checkpoint();
        while (nextCheckpoint <= completed) nextCheckpoint += args.every;
        nextCheckpoint = Math.min(nextCheckpoint, args.jobs);
        continue;
      }
      if (added < args.jobs && added - completed + args.batch <= args.backlog) {
        const n = Math.min(args.batch, args.jobs - added);
        const jobs = Array.from({ length: n }, (_, k) => ({ name: 'noop', data: { i: added + k }, opts: { removeOnComplete: true } }));
        await queue.addBulk(jobs);
        added += n;
        continue;
      }
      await oneMoreCompleted();
    }
    const seconds = (performance.now() - started) / 1000;
    if (readings.at(-1)?.completed !== completed) await checkpoint();
    await worker.close();
    const counts = await queue.getJobCounts('wait', 'active', 'completed', 'failed', 'delayed');
    console.log(`\n${completed.toLocaleString('en')} completed in ${seconds.toFixed(0)} s (${Math.round(completed / seconds).toLocaleString('en')} jobs/s, checkpoints included); failed ${failed}; left in Redis: ${JSON.stringify(counts)}`);
    const ok = completed === args.jobs && failed === 0 && counts.wait === 0 && counts.active === 0 && counts.completed === 0;
    printTable(readings);
    if (!ok) {
      console.log(`CHECK FAILED: expected ${args.jobs} completed, none failed, nothing left in wait/active/completed`);
      process.exitCode = 1;
    }
  } finally {
    await worker.close(true).catch(() => undefined);
    await queue.close();
    admin.disconnect();
    // The server's process handle is unref'd: keep Node alive until it has exited.
    const alive = setInterval(() => undefined, 1000);
    await redis.stop();
    clearInterval(alive);
  }
}

function printTable(readings) {
  const first = readings[0];
  console.log('\n| jobs processed | heap after gc(), MB | vs first | live heap (after the snapshot GC), MB | vs first | RSS, MB | external, MB | Redis used_memory, MB | waiting |');
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const r of readings) {
    console.log(`| ${r.completed.toLocaleString('en')} | ${mb(r.heapUsed)} | ${(r.heapUsed / first.heapUsed).toFixed(3)}x | ${mb(r.liveHeap)} | ${(r.liveHeap / first.liveHeap).toFixed(3)}x | ${mb(r.rss)} | ${mb(r.external)} | ${mb(r.redisMemory)} | ${r.waiting} |`);
  }
  const last = readings.at(-1);
  const at = `${last.completed.toLocaleString('en')} / ${first.completed.toLocaleString('en')}`;
  console.log(`\n${at} jobs (goal: within 10%, 0.9x-1.1x): live heap ${(last.liveHeap / first.liveHeap).toFixed(3)}x; heap after gc() ${(last.heapUsed / first.heapUsed).toFixed(3)}x; RSS ${(last.rss / first.rss).toFixed(3)}x`);
}

await main();
