// One scenario from start to verdict: its own redis-server (AOF, appendfsync always), a fleet of
// worker processes, a producer adding jobs in waves while the faults land, a drain, and the checks.
import { mkdtempSync, readFileSync, rmSync, existsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { startRedis } from '../test/support/redis-process.js';
import { checkScenario } from './checks.mjs';
import { readEvents } from './events.mjs';
import { Fleet } from './fleet.mjs';
import { onInterrupt } from './interrupt.mjs';
import { readLedgers } from './ledger.mjs';
import { checkCancels } from './cancel-checks.mjs';
import { checkMoves, movedRuns } from './move-checks.mjs';
import { checkPrefetch } from './prefetch-checks.mjs';
import { checkRetries, retriedRuns } from './retry-checks.mjs';
import { sleep } from './faults.mjs';
import { FREEZE_MS, TIMING } from './scenarios.mjs';

const READY_STATES = ['wait', 'paused', 'prioritized', 'active', 'delayed'];

/** Runs `scenario` under `profile` against the library at `libPath`; resolves with its checked row. */
export async function runScenario(scenario, profile, libPath) {
  const dir = mkdtempSync(join(tmpdir(), 'echomq-chaos-'));
  const redis = await startRedis({ args: ['--appendonly', 'yes', '--appendfsync', 'always'] });
  const admin = new Redis(redis.url, { maxRetriesPerRequest: null });
  admin.on('error', () => undefined);
  const { Queue } = await import(libPath);
  const queueName = `chaos-${randomBytes(4).toString('hex')}`;
  const partitions = scenario.partitions ?? 1;
  const queue = new Queue(queueName, { connection: redis.url, partitions });
  // Its connection errors while Redis restarts are expected here; the adds are retried by ioredis.
  queue.client.on('error', () => undefined);
  const fleet = new Fleet({
    dir,
    waitReady: (member) => waitForReady(member),
    worker: {
      libPath, redisUrl: redis.url, queue: queueName, sinkKey: `chaos:{${queueName}}:sink`, watchCancels: scenario.cancels !== undefined,
      workerOptions: { concurrency: profile.concurrency, drainDelay: 1, maxStalledCount: 1000, partitions, ...TIMING, ...scenario.workerOptions },
    },
  });
  const forget = onInterrupt(async () => {
    fleet.killAll();
    await redis.stop();
    if (!process.env.CHAOS_KEEP) rmSync(dir, { recursive: true, force: true });
  });
  try {
    for (let i = 0; i < profile.workers; i++) await fleet.spawnWorker();
    const ids = planJobs(profile, scenario.blocking ? profile.blockJobs : 0, scenario.moves, scenario.cancels, scenario.retries);
    const ackedAt = new Map();
    const targets = ids.filter((j) => j.data.kind === 'target').map((j) => j.id);
    const ctx = { fleet, redis, admin, queue, ackedAt, targets, faults: [] };
    await Promise.all([produce(queue, ids, { ...profile, ...scenario.load }, ackedAt), scenario.inject(ctx, profile)]);
    await drain(admin, queue, ids.length, profile.drainTimeoutMs);
    await fleet.stopAll();
    const state = await readState(admin, queue, ids.map((j) => j.id));
    const records = readLedgers(fleet.members);
    // A partitioned queue has a stream per partition: one list of them all, in time order.
    const streams = await Promise.all(queue.partitionKeys.map((keys) => readEvents(admin, keys.events)));
    const events = streams.flat().sort((a, b) => a.at - b.at);
    const cancelled = new Set((ctx.cancels ?? []).filter((c) => c.result).map((c) => c.id));
    const row = {
      scenario: scenario.name,
      ...checkScenario({ ids: ids.map((j) => j.id), ...state, records, faults: ctx.faults, crashes: fleet.crashes(), timing: TIMING, events, movedRuns: [...movedRuns(records, events), ...retriedRuns(records, events)], cancelled }),
    };
    if (scenario.retries) {
      if (process.env.CHAOS_KEEP) {
        writeFileSync(join(dir, 'events.jsonl'), events.map((e) => JSON.stringify(e)).join('\n') + '\n');
        writeFileSync(join(dir, 'kills.json'), JSON.stringify(ctx.faults, null, 1));
        console.log(`ledgers, events and kills kept in ${dir}`);
      }
      const kinds = new Map(ids.map((j) => [j.id, j.data.kind ?? 'plain']));
      return { ...row, ...checkRetries({ ids: ids.map((j) => j.id), kinds, jobs: state.jobs, records, events, faults: ctx.faults, timing: TIMING, backoffMs: scenario.retries.backoffMs }) };
    }
    if (scenario.workerOptions?.prefetch) {
      if (process.env.CHAOS_KEEP) {
        writeFileSync(join(dir, 'events.jsonl'), events.map((e) => JSON.stringify(e)).join('\n') + '\n');
        writeFileSync(join(dir, 'kills.json'), JSON.stringify(ctx.faults, null, 1));
        console.log(`ledgers, events and faults kept in ${dir}`);
      }
      return { ...row, ...checkPrefetch({ records, events, faults: ctx.faults, timing: TIMING }) };
    }
    if (scenario.cancels) {
      if (process.env.CHAOS_KEEP) {
        writeFileSync(join(dir, 'events.jsonl'), events.map((e) => JSON.stringify(e)).join('\n') + '\n');
        writeFileSync(join(dir, 'cancels.json'), JSON.stringify({ cancels: ctx.cancels, faults: ctx.faults }, null, 1));
        console.log(`ledgers, events, cancels and kills kept in ${dir}`);
      }
      return { ...row, ...checkCancels({ cancels: ctx.cancels, jobs: state.jobs, finished: state.finished, records, events, timing: TIMING }) };
    }
    if (!scenario.moves) return row;
    const kinds = new Map(ids.map((j) => [j.id, j.data.kind ?? 'plain']));
    if (process.env.CHAOS_KEEP) {
      // With the ledgers: the event stream and the kills, to follow a job through its runs and moves.
      writeFileSync(join(dir, 'events.jsonl'), events.map((e) => JSON.stringify(e)).join('\n') + '\n');
      writeFileSync(join(dir, 'kills.json'), JSON.stringify(ctx.faults, null, 1));
      console.log(`ledgers, events and kills kept in ${dir}`);
    }
    return { ...row, ...checkMoves({ ids: ids.map((j) => j.id), kinds, jobs: state.jobs, records, events, faults: ctx.faults, timing: TIMING }) };
  } finally {
    forget();
    await fleet.stopAll(2000);
    await queue.close().catch(() => undefined);
    admin.disconnect();
    await redis.stop();
    if (!process.env.CHAOS_KEEP) rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The jobs of one run: custom ids, so that an add resent after a cut connection stays one job.
 * With `moves` ({ stepDelayMs, limitMs }: [min, max] ranges), every third job runs in two steps
 * (moved to delayed for stepDelayMs between them) and every third from the second on meets a 429
 * once (rateLimit for limitMs, then given back). With `cancels` ({ workMs, delayMs: [min, max] }),
 * every third job is a target of queue.cancelJob (kind 'target'): it runs `workMs` (longer than a
 * cancel takes to reach its worker), has attempts left (a cancel must not be retried), and one
 * target in two is delayed by delayMs. With `retries` ({ backoffMs }), two jobs in three fail their
 * first attempt (kind 'retry', or 'retry-backoff' with a fixed backoff of backoffMs), attempts 3.
 */
export function planJobs(profile, blockJobs, moves, cancels, retries) {
  const [min, max] = profile.workMs;
  const within = ([low, high]) => low + Math.floor(Math.random() * (high - low));
  return Array.from({ length: profile.jobs }, (_, n) => {
    let data = n % Math.floor(profile.jobs / Math.max(1, blockJobs)) === 7 && blockJobs > 0
      ? { workMs: 0, blockMs: FREEZE_MS }
      : { workMs: within([min, max]) };
    if (moves && n % 3 === 0) data = { ...data, kind: 'steps', stepDelayMs: within(moves.stepDelayMs) };
    if (moves && n % 3 === 1) data = { ...data, kind: 'limited', limitMs: within(moves.limitMs) };
    if (retries && n % 3 !== 2) {
      const backoff = n % 2 === 0 ? { backoff: { type: 'fixed', delay: retries.backoffMs } } : {};
      return { id: `job-${n}`, data: { ...data, kind: n % 2 === 0 ? 'retry-backoff' : 'retry' }, opts: { attempts: 3, ...backoff } };
    }
    if (cancels && n % 3 === 0) {
      const delay = n % 2 === 0 ? within(cancels.delayMs) : 0;
      return { id: `job-${n}`, data: { workMs: cancels.workMs, kind: 'target' }, opts: { attempts: 3, ...(delay && { delay }) } };
    }
    return { id: `job-${n}`, data };
  });
}

/**
 * Adds the jobs in waves, so that there is load while the faults land; `ackedAt` gets the time
 * each job's add was acknowledged (a failover can lose an add acknowledged just before it).
 */
export async function produce(queue, jobs, profile, ackedAt = new Map()) {
  const size = Math.ceil(jobs.length / profile.waves);
  for (let i = 0; i < jobs.length; i += size) {
    const wave = jobs.slice(i, i + size);
    await queue.addBulk(wave.map((j) => ({ name: 'chaos', data: j.data, opts: { ...j.opts, jobId: j.id } })));
    for (const j of wave) ackedAt.set(j.id, Date.now());
    await sleep(profile.waveGapMs);
  }
}

export async function waitForReady(member, timeoutMs = 20_000) {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (member.exit) throw new Error(`chaos worker ${member.name} exited before it was ready: ${JSON.stringify(member.exit)}`);
    if (existsSync(member.ledgerFile) && readFileSync(member.ledgerFile, 'utf8').includes('"type":"ready"')) return;
    await sleep(50);
  }
  throw new Error(`chaos worker ${member.name} was not ready after ${timeoutMs} ms`);
}

/** Waits until every job finished (completed or failed), or the timeout; the checks say what is missing. */
async function drain(admin, queue, total, timeoutMs) {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    let finished = 0;
    for (const keys of queue.partitionKeys) finished += (await admin.zcard(keys.state('completed'))) + (await admin.zcard(keys.state('failed')));
    if (finished >= total) return;
    await sleep(200);
  }
}

/**
 * What Redis holds at the end: each job's hash, where it finished, and what is left in the ready
 * states. A partitioned queue's partitions are all read: a job found in two of them would show as a
 * hash read twice, so each id keeps the first partition that has it.
 */
export async function readState(admin, queue, ids) {
  const jobs = new Map(ids.map((id) => [id, undefined]));
  const finished = new Map();
  for (const keys of queue.partitionKeys) {
    const pipeline = admin.pipeline();
    for (const id of ids) pipeline.hgetall(keys.job(id));
    const hashes = (await pipeline.exec()).map(([, hash]) => (Object.keys(hash).length ? hash : undefined));
    ids.forEach((id, i) => {
      if (hashes[i] && !jobs.get(id)) jobs.set(id, hashes[i]);
    });
    for (const id of await admin.zrange(keys.state('completed'), 0, -1)) finished.set(id, 'completed');
    for (const id of await admin.zrange(keys.state('failed'), 0, -1)) finished.set(id, 'failed');
  }
  const counts = await queue.getJobCounts(...READY_STATES);
  const left = READY_STATES.reduce((sum, s) => sum + counts[s], 0);
  return { jobs, finished, left };
}
