// The job scheduler scenario from start to verdict: its own redis-server (no AOF: see below),
// worker processes running several Workers each, app processes that upsert one scheduler at the
// same moment (and again later, at slot boundaries, as restarted apps do), kill -9 of worker
// processes a few ms around the scheduler's slots while it fires, its removal, a drain and the checks.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { startRedis } from '../test/support/redis-process.js';
import { checkScenario } from './checks.mjs';
import { readEvents } from './events.mjs';
import { killAtSlotBoundaries, sleep } from './faults.mjs';
import { Fleet } from './fleet.mjs';
import { onInterrupt } from './interrupt.mjs';
import { readLedgers } from './ledger.mjs';
import { readState, waitForReady } from './run-scenario.mjs';
import { checkSchedulerRuns, coalescedSlots } from './scheduler-checks.mjs';
import { SCHEDULER_TIMING } from './scenarios.mjs';

const APP_SCRIPT = fileURLToPath(new URL('./app-process.mjs', import.meta.url));
const SCHEDULER_ID = 'chaos-tick';
/** Redis's latency monitor records what held its event loop this long or more: the report names such stalls. */
const REDIS_STALL_MS = 50;
/** A gap in the harness's own 10 ms ticks this long or more is reported as a stall of the machine. */
const STALL_MS = 100;

/** Runs the scheduler `scenario` under `profile` against the library at `libPath`; resolves with its checked row. */
export async function runSchedulerScenario(scenario, profile, libPath) {
  const { every, processes, apps, workMs } = scenario.scheduler;
  const slots = profile.schedulerSlots;
  const dir = mkdtempSync(join(tmpdir(), 'echomq-chaos-scheduler-'));
  // Without AOF, unlike the other scenarios: nothing here restarts Redis, and with appendfsync
  // always every reply waits for the disk's fsync, which on a shared machine took 100+ ms at times
  // (Redis's latency monitor: aof-fsync-always). A stall longer than a slot makes the scheduler
  // skip a slot, by design (missed slots give one job), for the disk's sake and not a kill's.
  const redis = await startRedis({ args: ['--latency-monitor-threshold', String(REDIS_STALL_MS)] });
  const admin = new Redis(redis.url, { maxRetriesPerRequest: null });
  admin.on('error', () => undefined);
  const { Queue } = await import(libPath);
  const queueName = `chaos-${randomBytes(4).toString('hex')}`;
  const queue = new Queue(queueName, { connection: redis.url });
  const fleet = new Fleet({
    dir,
    waitReady: (member) => waitForReady(member),
    worker: {
      libPath, redisUrl: redis.url, queue: queueName, sinkKey: `chaos:{${queueName}}:sink`,
      workerOptions: { concurrency: 1, drainDelay: 1, maxStalledCount: 1000, ...SCHEDULER_TIMING },
    },
  });
  const appChildren = [];
  const forget = onInterrupt(async () => {
    fleet.killAll();
    for (const child of appChildren) child.kill('SIGKILL');
    await redis.stop();
    if (!process.env.CHAOS_KEEP) rmSync(dir, { recursive: true, force: true });
  });
  const stalls = watchStalls();
  try {
    await Promise.all(processes.map((workers) => fleet.spawnWorker({ workers })));
    const app = { libPath, redisUrl: redis.url, queue: queueName, schedulerId: SCHEDULER_ID, repeat: { every }, template: { name: 'tick', data: { workMs } } };
    const instances = await Promise.all(Array.from({ length: apps }, (_, i) => spawnApp(dir, `app${i + 1}`, app, appChildren)));

    // The shared moment is 1 ms before a slot: the first slot is due at once, and an instance a
    // millisecond or two late computes the slot after it. Whatever first slots they compute, the
    // same arguments must make one scheduler.
    const firstUpsert = (Math.floor((Date.now() + 1000) / every) + 1) * every - 1;
    const plans = instances.map((instance, i) => [firstUpsert, ...restartUpserts(firstUpsert + 1, every, slots, i)]);
    instances.forEach((instance, i) => instance.child.send({ upsertAt: plans[i] }));
    const ctx = { fleet, faults: [] };
    await scenario.inject(ctx, { firstSlot: firstUpsert + 1, every, slots });

    const schedulers = await queue.getJobSchedulers();
    const removedAt = Date.now();
    const removed = await queue.removeJobScheduler(SCHEDULER_ID);
    await Promise.all(instances.map((instance) => instance.exited));
    await drain(queue, profile.drainTimeoutMs);
    stalls.stop();
    await fleet.stopAll();

    const completedIds = await admin.zrange(queue.keys.state('completed'), 0, -1);
    const failedIds = await admin.zrange(queue.keys.state('failed'), 0, -1);
    const upserts = instances.flatMap((instance) => readAppLedger(instance));
    // The scheduler's first slot is the one the simultaneous upserts answered (the earliest, should
    // a slot have passed between them); every slot from it on must have run.
    const firstAnswers = upserts.filter((u) => u.type === 'upsert' && u.at === firstUpsert).map((u) => slotOf(u.job ?? '') ?? Infinity);
    const firstSlot = Math.min(...firstAnswers);
    if (!Number.isFinite(firstSlot)) throw new Error(`the simultaneous upserts answered no job: ${JSON.stringify(upserts)}`);
    const lastSlot = Math.max(firstSlot, ...[...completedIds, ...failedIds].map((id) => slotOf(id) ?? 0));
    const ids = [];
    for (let slot = firstSlot; slot <= lastSlot; slot += every) ids.push(`repeat:${SCHEDULER_ID}:${slot}`);
    const state = await readState(admin, queue, ids);
    const records = readLedgers(fleet.members);
    const events = await readEvents(admin, queue.keys.events);
    if (process.env.CHAOS_KEEP) {
      // With the ledgers: the event stream and the kills, to follow a slot through its pickups and steps.
      writeFileSync(join(dir, 'events.jsonl'), events.map((e) => JSON.stringify(e)).join('\n') + '\n');
      writeFileSync(join(dir, 'kills.json'), JSON.stringify({ firstSlot, every, kills: ctx.faults }, null, 1));
      console.log(`ledgers, events and kills kept in ${dir}`);
    }
    const finishedIds = [...completedIds, ...failedIds];
    const coalesced = coalescedSlots({ ids, every, firstSlot, finishedIds, events, faults: ctx.faults });
    const coalescedIds = new Set(coalesced.map((c) => c.id));
    const base = checkScenario({ ids: ids.filter((id) => !coalescedIds.has(id)), ...state, records, faults: ctx.faults, crashes: fleet.crashes(), timing: SCHEDULER_TIMING, events });
    return {
      scenario: scenario.name,
      ...base,
      timing: SCHEDULER_TIMING,
      killsForgone: ctx.killsForgone ?? 0,
      redisStalls: await redisStalls(admin),
      ...checkSchedulerRuns({
        ids, every, firstSlot, lastSlot, removedAt, removed, records, faults: ctx.faults,
        finishedIds, events, coalesced,
        schedulersBeforeRemoval: schedulers, schedulersAfter: await queue.getJobSchedulersCount(),
        harnessStalls: stalls.found, upserts, firstUpsert, plannedUpserts: plans.flat().length, workers: processes.reduce((sum, n) => sum + n, 0),
        timing: SCHEDULER_TIMING,
      }),
    };
  } finally {
    stalls.stop();
    forget();
    await fleet.stopAll(2000);
    for (const child of appChildren) child.kill('SIGKILL');
    await queue.close().catch(() => undefined);
    admin.disconnect();
    await redis.stop();
    if (!process.env.CHAOS_KEEP) rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Each app's later upserts, as if it restarted every second or so: at slot boundaries, 2 ms
 * before, on, or 2 ms after (the instances take different ones), while the slots fire.
 */
function restartUpserts(firstSlot, every, slots, instance) {
  const times = [];
  const stride = Math.max(2, Math.round(1000 / every)) + instance;
  for (let k = stride; k < slots - 1; k += stride) times.push(firstSlot + k * every + (instance - 1) * 2);
  return times;
}

/** An app instance: a process that upserts when it is told to (the plan comes by IPC once it is connected). */
async function spawnApp(dir, name, settings, children) {
  const ledgerFile = join(dir, `${name}.ledger`);
  const stderr = openSync(join(dir, `${name}.stderr`), 'a');
  const child = spawn(process.execPath, [APP_SCRIPT, JSON.stringify({ ...settings, name, ledgerFile })], { stdio: ['ignore', 'ignore', stderr, 'ipc'] });
  children.push(child);
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  await new Promise((resolve, reject) => {
    child.once('message', resolve);
    exited.then((exit) => reject(new Error(`chaos app ${name} exited before it was ready: ${JSON.stringify(exit)}`)));
  });
  return { name, ledgerFile, child, exited };
}

function readAppLedger({ ledgerFile }) {
  if (!existsSync(ledgerFile)) return [];
  return readFileSync(ledgerFile, 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line));
}

/** Waits until nothing is left in wait, paused, prioritized, active or delayed (or the timeout); the checks say what is missing. */
async function drain(queue, timeoutMs) {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    const counts = await queue.getJobCounts('wait', 'paused', 'prioritized', 'active', 'delayed');
    if (Object.values(counts).every((n) => n === 0)) return;
    await sleep(200);
  }
}

/**
 * The harness's own event loop, checked every 10 ms: a gap of STALL_MS or more means this machine
 * ran nothing of the harness's for that long, and likely nothing of the workers' either (on a
 * 2-core machine shared with other work). A slot skipped during such a stall was missed for want
 * of CPU, not for a kill; the report says so next to the skip (the check still counts it).
 */
function watchStalls() {
  const found = [];
  let last = Date.now();
  const timer = setInterval(() => {
    const now = Date.now();
    if (now - last >= STALL_MS) found.push({ at: last, ms: now - last });
    last = now;
  }, 10);
  return { found, stop: () => clearInterval(timer) };
}

/** What held Redis's event loop REDIS_STALL_MS or more (LATENCY LATEST): { event: max ms }. */
async function redisStalls(admin) {
  const latest = await admin.call('LATENCY', 'LATEST');
  return Object.fromEntries(latest.map(([event, , , max]) => [event, max]));
}

export function slotOf(jobId) {
  const match = /^repeat:[^:]+:(\d+)$/.exec(jobId);
  return match ? Number(match[1]) : undefined;
}
