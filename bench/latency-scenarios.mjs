// Latency with an idle worker: add to handler start, and how late delayed jobs fire.
import { performance } from 'node:perf_hooks';
import { check, CheckFailed } from './measure.mjs';
import { Tally } from './tally.mjs';
import { verifyCounts, verifyTally } from './verify.mjs';
import { percentile } from './stats.mjs';

/** Long enough for the worker to be back in its blocking wait before the next add. */
const IDLE_PAUSE_MS = 10;

/**
 * Runs `body(queue, tally, startedAt, whenStarted)` against a running worker whose handler records
 * start times; `whenStarted(i)` resolves when job i's handler has started.
 */
async function withIdleWorker(system, ctx, total, concurrency, body) {
  const name = ctx.queueName();
  const queue = system.queue(name, ctx.url);
  const tally = new Tally(total);
  const startedAt = new Array(total);
  const onStart = new Array(total);
  const whenStarted = (i) => (startedAt[i] ? Promise.resolve() : new Promise((resolve) => (onStart[i] = resolve)));
  const worker = system.worker(name, ctx.url, async (job) => {
    startedAt[job.data.i] = { perf: performance.now(), wall: Date.now() };
    tally.ran(job.data.i);
    onStart[job.data.i]?.();
  }, concurrency);
  worker.on('completed', () => tally.completed());
  worker.on('error', (error) => console.error(`${system.name} worker error:`, error.message));
  let closed = false;
  try {
    await system.ready(queue);
    await system.ready(worker);
    void worker.run();
    await new Promise((resolve) => setTimeout(resolve, 50));
    const result = await body(queue, tally, startedAt, whenStarted);
    await tally.whenDone(ctx.timeoutMs);
    await worker.close();
    closed = true;
    verifyTally(tally);
    await verifyCounts(ctx.meter, system, name, { wait: 0, active: 0, completed: total });
    return result;
  } finally {
    if (!closed) await worker.close(true);
    await queue.close();
  }
}

/**
 * From just before add() to the handler's start, one job at a time, the worker idle each time.
 * The bench waits for the start on a promise the handler resolves, not by polling: on a 2-core
 * machine a polling loop keeps one core busy and Redis waits for a scheduler tick (about 4 ms)
 * now and then, which was the whole p99 of both systems.
 */
export const addToStart = {
  name: 'add-to-start latency, idle worker',
  latency: true,
  size: (sizes) => sizes.latency,
  run: (system, ctx) => withIdleWorker(system, ctx, ctx.sizes.latency, 1, async (queue, tally, startedAt, whenStarted) => {
    const latencies = [];
    for (let i = 0; i < ctx.sizes.latency; i++) {
      await new Promise((resolve) => setTimeout(resolve, IDLE_PAUSE_MS));
      const before = performance.now();
      await queue.add('bench', { i });
      await whenStarted(i);
      latencies.push(startedAt[i].perf - before);
    }
    return { p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99) };
  }),
};

/**
 * Delayed jobs (200 ms to 2 s, spread evenly) added at once to an idle worker at concurrency 50:
 * how long after its due time each job's handler starts. None may start early.
 */
export const delayedFiring = {
  name: 'delayed-job firing error',
  latency: true,
  size: (sizes) => sizes.delayed,
  run: (system, ctx) => withIdleWorker(system, ctx, ctx.sizes.delayed, 50, async (queue, tally, startedAt) => {
    const total = ctx.sizes.delayed;
    const dueAt = [];
    for (let i = 0; i < total; i++) {
      const delay = 200 + Math.round((i * 1800) / total);
      dueAt.push(Date.now() + delay);
      await queue.add('bench', { i }, { delay });
    }
    await tally.whenDone(ctx.timeoutMs);
    const errors = startedAt.map((started, i) => started.wall - dueAt[i]);
    check(Math.min(...errors) >= 0, `a delayed job started ${-Math.min(...errors)} ms before it was due`);
    return { p50Ms: percentile(errors, 50), p99Ms: percentile(errors, 99) };
  }),
};

/** The scheduler firing scenario's period: short, so that its slots fit in a few seconds. */
const SCHEDULER_EVERY_MS = 100;

/**
 * A job scheduler (upsertJobScheduler, every 100 ms) on an idle worker at concurrency 1: how long
 * after its slot each job's handler starts, over the `sizes.scheduler` slots after the first. Both
 * systems name a scheduler's job `repeat:<scheduler id>:<slot ms>`, so the slot is read from the
 * id. The first job is left out (BullMQ's is due at the upsert itself, EchoMQ's at the next aligned
 * slot). A slot that got no job (a scheduler that moves on from the time its job was taken skips
 * the slots it was late for) is counted, not timed. The self-check: no slot ran twice, none early.
 */
export const schedulerFiring = {
  name: 'scheduler firing error',
  latency: true,
  figures: [['p50Ms', 'p50 ms'], ['p99Ms', 'p99 ms'], ['missedSlots', 'slots missed']],
  size: (sizes) => sizes.scheduler,
  run: async (system, ctx) => {
    const total = ctx.sizes.scheduler;
    const name = ctx.queueName();
    const queue = system.queue(name, ctx.url);
    const starts = [];
    let lastSlot = Infinity;
    let resolveDone;
    const done = new Promise((resolve) => (resolveDone = resolve));
    const worker = system.worker(name, ctx.url, async (job) => {
      const slot = Number(/^repeat:bench-tick:(\d+)$/.exec(job.id)?.[1]);
      starts.push({ wall: Date.now(), id: job.id, slot });
      if (starts.length === 1) lastSlot = slot + total * SCHEDULER_EVERY_MS;
      if (slot >= lastSlot) resolveDone();
    }, 1);
    worker.on('error', (error) => console.error(`${system.name} worker error:`, error.message));
    let closed = false;
    try {
      await system.ready(queue);
      await system.ready(worker);
      void worker.run();
      await new Promise((resolve) => setTimeout(resolve, 50));
      await queue.upsertJobScheduler('bench-tick', { every: SCHEDULER_EVERY_MS }, { name: 'bench', data: {} });
      let timer;
      const timeout = new Promise((_, reject) => { timer = setTimeout(() => reject(new CheckFailed(`${starts.length} slots ran in ${ctx.timeoutMs} ms`)), ctx.timeoutMs); });
      await Promise.race([done, timeout]).finally(() => clearTimeout(timer));
      await queue.removeJobScheduler('bench-tick');
      // A slot's job taken just before the removal finishes; nothing comes after it.
      await new Promise((resolve) => setTimeout(resolve, 2 * SCHEDULER_EVERY_MS));
      await worker.close();
      closed = true;
      const bad = starts.find((s) => !Number.isFinite(s.slot));
      check(!bad, `a job that is no slot's ran: ${bad?.id}`);
      check(new Set(starts.map((s) => s.slot)).size === starts.length, 'a slot ran twice');
      const timed = starts.filter((s) => s.slot > starts[0].slot && s.slot <= lastSlot);
      const errors = timed.map((s) => s.wall - s.slot);
      check(Math.min(...errors) >= 0, `a scheduler's job started ${-Math.min(...errors)} ms before its slot`);
      await verifyCounts(ctx.meter, system, name, { wait: 0, active: 0, completed: starts.length });
      return { p50Ms: percentile(errors, 50), p99Ms: percentile(errors, 99), missedSlots: total - timed.length };
    } finally {
      if (!closed) await worker.close(true);
      await queue.close();
    }
  },
};
