// One queue on a Redis Cluster of three masters, run twice: plain (one hash tag, so one master
// does all the work) and partitioned (PARTITIONS hash tags spread over the masters). Each run adds
// the jobs with addBulk, processes them with one worker, then adds them again and processes them
// with worker processes; each phase is measured on every master. EchoMQ only (BullMQ has no
// partitions), and opt-in: it starts a cluster of its own (`npm run bench -- --only partitions`).
import { preload } from './add-scenarios.mjs';
import { startBenchCluster } from './bench-cluster.mjs';
import { measureMasters } from './measure.mjs';
import { CHILD_CONCURRENCY, PROCESSES, WorkerProcesses } from './process-scenarios.mjs';
import { formatNumber, median } from './stats.mjs';
import { echomqOnCluster } from './systems.mjs';
import { Tally } from './tally.mjs';
import { verifyQueueCounts, verifyTally } from './verify.mjs';

/**
 * 8 hash tags over 3 masters: at best 3 / 3 / 2, so the busiest master holds 3/8 of the queue
 * (0.375, under the 0.4x goal with a little room for what partitioning costs per job). 6 would
 * split 2 / 2 / 2, but leaves nothing to spread over a fourth master added later.
 */
export const PARTITIONS = 8;
const CONCURRENCY = 50;

/** The phases of one run, in order, with the rows they get in the table. */
const PHASES = [
  { id: 'add', label: 'addBulk (1,000 a batch)' },
  { id: 'process', label: `process, one worker, concurrency ${CONCURRENCY}` },
  { id: 'processes', label: `process, ${PROCESSES} processes x ${CHILD_CONCURRENCY}` },
];

/** The two ways the queue runs, compared A B A B. */
const VARIANTS = [
  { id: 'plain', name: 'plain queue', partitions: 1 },
  { id: 'partitioned', name: `${PARTITIONS} partitions`, partitions: PARTITIONS },
];

export const partitions = {
  name: 'partitions',
  size: (sizes) => sizes.partitions,
  variants: VARIANTS,

  /**
   * Starts the cluster and picks each variant's queue name: one whose partitions land as evenly
   * on the masters as they can (a random name puts 4 or more of 8 on one master three times in
   * four). Resolves with what run() takes; stop() must follow, whatever happens.
   */
  async setUp() {
    const cluster = await startBenchCluster();
    try {
      const names = new Map();
      for (const variant of VARIANTS) names.set(variant.id, await evenName(cluster, variant.partitions));
      return { cluster, names, stop: () => cluster.stop() };
    } catch (error) {
      await cluster.stop();
      throw error;
    }
  },

  /** A short run of each variant, so script loading and JIT warm-up are not timed. */
  async warmUp(env) {
    for (const variant of VARIANTS) {
      await env.cluster.flush();
      await oneWorkerRun(variant, env, 200, 60_000);
    }
  },

  /** One run of `variant` on an empty cluster: every phase, each with its figures. */
  async run(variant, env, sizes, timeoutMs) {
    const total = sizes.partitions;
    const { add, process } = await oneWorkerRun(variant, env, total, timeoutMs);
    await env.cluster.flush();
    const processes = await processesRun(variant, env, total, timeoutMs);
    return { add, process, processes, layout: await layoutOf(env.cluster, env.names.get(variant.id), variant.partitions) };
  },

  header: ['partitions / figure (median)', ...VARIANTS.map((v) => v.name), `${VARIANTS[1].name} / ${VARIANTS[0].name}`],

  /** The table: per phase, then add + one-worker process together (the figures the goals are about). */
  rows(runsByVariant, sizes) {
    const [plain, partitioned] = VARIANTS.map((v) => runsByVariant.get(v.id) ?? []);
    const ok = (runs) => (runs.some((run) => run.failed) ? [] : runs);
    const rows = [];
    const row = (label, figureOf) => {
      const [a, b] = [plain, partitioned].map((runs) => median(ok(runs).map(figureOf)));
      rows.push([label, formatNumber(a), formatNumber(b), Number.isFinite(b / a) ? `${(b / a).toFixed(2)}x` : '-']);
    };
    const eachMaster = (label, cpuByMaster) => {
      const cells = [plain, partitioned].map((runs) => {
        const good = ok(runs);
        if (good.length === 0) return '-';
        return good[0].layout.map((_, m) => formatNumber(median(good.map((run) => cpuByMaster(run)[m])))).join(' / ');
      });
      rows.push([label, ...cells, '']);
    };
    const failed = [plain, partitioned].map((runs) => runs.filter((run) => run.failed).length);
    for (const { id, label } of PHASES) {
      rows.push([`${label} (${sizes.partitions} jobs)`, ...failed.map((n) => (n ? `FAILED ${n}` : '')), '']);
      row('  jobs/s', (run) => run[id].jobsPerSec);
      row('  busiest master: Redis CPU µs/job', (run) => run[id].busiestRedisCpuUsPerJob);
      row('  all masters: Redis CPU µs/job', (run) => run[id].totalRedisCpuUsPerJob);
      eachMaster('  each master: Redis CPU µs/job', (run) => run[id].redisCpuUsPerJobByMaster);
      row('  Redis commands/job', (run) => run[id].commandsPerJob);
      row('  Node CPU µs/job', (run) => run[id].nodeCpuUsPerJob);
    }
    const addAndProcess = (run) => run.add.redisCpuUsPerJobByMaster.map((cpu, m) => cpu + run.process.redisCpuUsPerJobByMaster[m]);
    rows.push(['add + process, one worker (goals: busiest <= 0.4x, all <= 1.15x)', '', '', '']);
    row('  busiest master: Redis CPU µs/job', (run) => Math.max(...addAndProcess(run)));
    row('  all masters: Redis CPU µs/job', (run) => addAndProcess(run).reduce((sum, cpu) => sum + cpu, 0));
    eachMaster('  each master: Redis CPU µs/job', addAndProcess);
    const layouts = [plain, partitioned].map((runs) => runs.find((run) => run.layout)?.layout.join(' / ') ?? '-');
    rows.push(['hash tags on each master', ...layouts, '']);
    return rows;
  },

  /** Per phase and master, the commands and Redis µs per job of each variant's last run (INFO commandstats). */
  breakdown(runsByVariant) {
    const tables = [];
    for (const variant of VARIANTS) {
      const last = (runsByVariant.get(variant.id) ?? []).at(-1);
      if (!last || last.failed) continue;
      for (const { id, label } of PHASES) {
        const byMaster = last[id].byMaster;
        const names = [...new Set(byMaster.flatMap((m) => Object.keys(m.usecPerJob)))]
          .sort((x, y) => total(byMaster, y) - total(byMaster, x));
        tables.push({
          title: `${variant.name}, ${label}: calls and Redis µs per job on each master (last round)`,
          header: ['command', ...byMaster.flatMap((_, m) => [`m${m} calls`, `m${m} µs`])],
          rows: names.map((n) => [n, ...byMaster.flatMap((m) => [formatNumber(m.callsPerJob[n] ?? 0), formatNumber(m.usecPerJob[n] ?? 0)])]),
        });
      }
    }
    return tables;
  },
};

function total(byMaster, name) {
  return byMaster.reduce((sum, m) => sum + (m.usecPerJob[name] ?? 0), 0);
}

/** Adds `total` jobs with addBulk (measured), then one worker at CONCURRENCY processes them (measured). */
async function oneWorkerRun(variant, env, total, timeoutMs) {
  const { cluster, names } = env;
  const system = echomqOnCluster(variant.partitions);
  const name = names.get(variant.id);
  const queue = system.queue(name, cluster.seeds);
  const tally = new Tally(total);
  const worker = system.worker(name, cluster.seeds, async (job) => { tally.ran(job.data.i); }, CONCURRENCY);
  worker.on('completed', () => tally.completed());
  worker.on('error', (error) => console.error(`${variant.name} worker error:`, error.message));
  let closed = false;
  try {
    await system.ready(queue);
    await system.ready(worker); // subscribed to the wake channels: the adds' wake-ups reach it, as in use
    const add = await measureMasters(cluster.meters, total, () => preload(queue, total));
    await verifyQueueCounts(queue, { wait: total, active: 0, completed: 0 });
    const process = await measureMasters(cluster.meters, total, async () => {
      void worker.run();
      await tally.whenDone(timeoutMs);
    });
    await worker.close();
    closed = true;
    verifyTally(tally);
    await verifyQueueCounts(queue, { wait: 0, active: 0, completed: total });
    return { add, process };
  } finally {
    if (!closed) await worker.close(true);
    await queue.close();
    system.disconnect();
  }
}

/** Preloads `total` jobs (not measured); PROCESSES worker processes process them (measured). */
async function processesRun(variant, env, total, timeoutMs) {
  const { cluster, names } = env;
  const system = echomqOnCluster(variant.partitions);
  const name = names.get(variant.id);
  const queue = system.queue(name, cluster.seeds);
  const workers = new WorkerProcesses(system.id, name, cluster.seeds, PROCESSES, CHILD_CONCURRENCY);
  try {
    await preload(queue, total);
    await workers.start();
    const figures = await measureMasters(cluster.meters, total, () => workers.run(total, timeoutMs));
    const tally = new Tally(total);
    await workers.stop(tally);
    verifyTally(tally);
    await verifyQueueCounts(queue, { wait: 0, active: 0, completed: total });
    return figures;
  } finally {
    await workers.kill();
    await queue.close();
    system.disconnect();
  }
}

/** How many of the queue's hash tags each master holds, in the meters' order. */
async function layoutOf(cluster, name, partitionCount) {
  const counts = cluster.meters.map(() => 0);
  for (let i = 0; i < partitionCount; i++) counts[await cluster.masterOf(partitionCount === 1 ? name : `${name}#${i}`)]++;
  return counts;
}

/** The first of pbench-1, pbench-2, ... whose hash tags differ by at most one between masters. */
async function evenName(cluster, partitionCount) {
  for (let n = 1; ; n++) {
    const counts = await layoutOf(cluster, `pbench-${n}`, partitionCount);
    if (Math.max(...counts) - Math.min(...counts) <= 1) return `pbench-${n}`;
  }
}
