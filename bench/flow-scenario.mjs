// Flows: a parent with 100 children, from FlowProducer.add to the parent completed.
import { performance } from 'node:perf_hooks';
import { check, CheckFailed, measure } from './measure.mjs';
import { median } from './stats.mjs';
import { verifyCounts } from './verify.mjs';

export const FLOW_CHILDREN = 100;
/** Both workers, both systems: the children's is the one that matters. */
export const FLOW_CONCURRENCY = 10;

/**
 * Runs `count` flows one after another, each one parent (in its own queue) with 100 children (in
 * another), against a children's worker and a parents' worker at concurrency 10, both idle and
 * blocked when a flow is added. A flow's time runs from just before add() to the parent worker's
 * 'completed' for its parent. One flow first, untimed: the flow scripts loaded and the code warm.
 *
 * Checked: every child's handler ran exactly once; a parent's handler ran once, and only after all
 * of its children's handlers had run; both queues end with wait and active empty and every job
 * completed.
 */
async function runFlows(system, ctx, count) {
  const childQueueName = `${ctx.queueName()}-children`;
  const parentQueueName = `${ctx.queueName()}-parents`;
  const producer = system.flowProducer(ctx.url);
  const childQueue = system.queue(childQueueName, ctx.url);
  const parentQueue = system.queue(parentQueueName, ctx.url);
  const flows = count + 1; // flow 0 is the warm-up
  const childRuns = new Uint8Array(flows * FLOW_CHILDREN);
  const childrenRan = new Uint16Array(flows);
  const parentRuns = new Uint8Array(flows);
  const problems = [];
  const onParentDone = new Array(flows);
  const childWorker = system.worker(childQueueName, ctx.url, async (job) => {
    const { f, c } = job.data;
    if (childRuns[f * FLOW_CHILDREN + c]++ === 0) childrenRan[f]++;
    return c;
  }, FLOW_CONCURRENCY);
  const parentWorker = system.worker(parentQueueName, ctx.url, async (job) => {
    const { f } = job.data;
    if (parentRuns[f]++ > 0) problems.push(`parent of flow ${f} ran twice`);
    if (childrenRan[f] !== FLOW_CHILDREN) problems.push(`parent of flow ${f} ran after ${childrenRan[f]} of its ${FLOW_CHILDREN} children`);
    return f;
  }, FLOW_CONCURRENCY);
  parentWorker.on('completed', (job) => onParentDone[job.data.f]?.());
  for (const worker of [childWorker, parentWorker]) worker.on('error', (error) => console.error(`${system.name} worker error:`, error.message));
  let closed = false;
  const flowOf = (f) => ({
    name: 'parent', queueName: parentQueueName, data: { f },
    children: Array.from({ length: FLOW_CHILDREN }, (_, c) => ({ name: 'child', queueName: childQueueName, data: { f, c } })),
  });
  const runOne = async (f) => {
    const done = new Promise((resolve) => (onParentDone[f] = resolve));
    let timer;
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new CheckFailed(`flow ${f}: the parent did not complete in ${ctx.timeoutMs} ms`)), ctx.timeoutMs);
    });
    const started = performance.now();
    try {
      await producer.add(flowOf(f));
      await Promise.race([done, timeout]);
    } finally {
      clearTimeout(timer);
    }
    return performance.now() - started;
  };
  try {
    await Promise.all([system.ready(producer), system.ready(childQueue), system.ready(parentQueue), system.ready(childWorker), system.ready(parentWorker)]);
    void childWorker.run();
    void parentWorker.run();
    await new Promise((resolve) => setTimeout(resolve, 50));
    await runOne(0);
    const flowMs = [];
    const figures = await measure(ctx.meter, count * (FLOW_CHILDREN + 1), async () => {
      for (let f = 1; f <= count; f++) flowMs.push(await runOne(f));
    });
    await Promise.all([childWorker.close(), parentWorker.close()]);
    closed = true;
    check(problems.length === 0, problems.slice(0, 3).join('; '));
    let missing = 0;
    let duplicates = 0;
    for (const runs of childRuns) if (runs === 0) missing++; else if (runs > 1) duplicates++;
    check(missing === 0 && duplicates === 0, `children: ${missing} never ran, ${duplicates} ran more than once`);
    check(parentRuns.every((runs) => runs === 1), 'a parent did not run exactly once');
    await verifyCounts(ctx.meter, system, childQueueName, { wait: 0, active: 0, completed: flows * FLOW_CHILDREN });
    await verifyCounts(ctx.meter, system, parentQueueName, { wait: 0, active: 0, completed: flows });
    // Commands per child: the flow's whole cost (add, children, settles, the parent) over its children.
    return { ...figures, flowMs: median(flowMs), commandsPerChild: figures.commandsPerJob * (FLOW_CHILDREN + 1) / FLOW_CHILDREN };
  } finally {
    if (!closed) await Promise.all([childWorker.close(true), parentWorker.close(true)]);
    await Promise.all([producer.close(), childQueue.close(), parentQueue.close()]);
  }
}

/** One flow at a time, `sizes.flows` of them a run. */
export const flow = {
  name: `flow, 1 parent + ${FLOW_CHILDREN} children, concurrency ${FLOW_CONCURRENCY}`,
  size: (sizes) => sizes.flows * (FLOW_CHILDREN + 1),
  figures: [
    ['flowMs', 'add to parent completed, ms (median)'], ['jobsPerSec', 'jobs/s (children + parent)'],
    ['commandsPerChild', 'Redis commands/child'], ['redisCpuUsPerJob', 'Redis CPU µs/job'], ['nodeCpuUsPerJob', 'Node CPU µs/job'],
  ],
  run: (system, ctx) => runFlows(system, ctx, ctx.sizes.flows),
};
