// Adding jobs: one at a time, many in flight at once, and addBulk in batches of 1,000.
import { measure } from './measure.mjs';
import { verifyCounts, verifyIds } from './verify.mjs';

const IN_FLIGHT = 1000;
export const BULK_BATCH = 1000;

async function addScenario(system, ctx, total, addAll) {
  const name = ctx.queueName();
  const queue = system.queue(name, ctx.url);
  try {
    await system.ready(queue);
    const ids = [];
    const figures = await measure(ctx.meter, total, () => addAll(queue, ids));
    verifyIds(ids, total);
    await verifyCounts(ctx.meter, system, name, { wait: total, active: 0, completed: 0 });
    return figures;
  } finally {
    await queue.close();
  }
}

/** Awaits each add before the next: the round trip is the cost. */
export const addOne = {
  name: 'add one at a time',
  size: (sizes) => sizes.addOne,
  run: (system, ctx) => addScenario(system, ctx, ctx.sizes.addOne, async (queue, ids) => {
    for (let i = 0; i < ctx.sizes.addOne; i++) ids.push((await queue.add('bench', { i })).id);
  }),
};

/** 1,000 adds in flight at a time, so the client pipelines them. */
export const addConcurrent = {
  name: 'add concurrently',
  size: (sizes) => sizes.addConcurrent,
  run: (system, ctx) => addScenario(system, ctx, ctx.sizes.addConcurrent, async (queue, ids) => {
    const total = ctx.sizes.addConcurrent;
    for (let start = 0; start < total; start += IN_FLIGHT) {
      const batch = [];
      for (let i = start; i < Math.min(total, start + IN_FLIGHT); i++) batch.push(queue.add('bench', { i }));
      for (const job of await Promise.all(batch)) ids.push(job.id);
    }
  }),
};

/** addBulk with 1,000 jobs a call. */
export const addBulk = {
  name: 'addBulk (1,000 a batch)',
  size: (sizes) => sizes.addBulk,
  run: (system, ctx) => addScenario(system, ctx, ctx.sizes.addBulk, async (queue, ids) => {
    const total = ctx.sizes.addBulk;
    for (let start = 0; start < total; start += BULK_BATCH) {
      const jobs = [];
      for (let i = start; i < Math.min(total, start + BULK_BATCH); i++) jobs.push({ name: 'bench', data: { i } });
      for (const job of await queue.addBulk(jobs)) ids.push(job.id);
    }
  }),
};

/** Fills a queue with `total` no-op jobs (not measured), numbered by data.i, each with `opts` when given. */
export async function preload(queue, total, opts) {
  await preloadJobs(queue, total, (i) => (opts ? { name: 'bench', data: { i }, opts } : { name: 'bench', data: { i } }));
}

/** Adds `total` jobs, `jobOf(i)` each, BULK_BATCH to an addBulk call. */
export async function preloadJobs(queue, total, jobOf) {
  for (let start = 0; start < total; start += BULK_BATCH) {
    const jobs = [];
    for (let i = start; i < Math.min(total, start + BULK_BATCH); i++) jobs.push(jobOf(i));
    await queue.addBulk(jobs);
  }
}
