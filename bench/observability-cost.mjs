// npm run bench:observability [-- --jobs N] [--rounds N]
// What the observability integrations cost a worker per job (docs/observability.md, "What it
// costs"). EchoMQ alone, on a private redis-server (so INFO commandstats counts only this
// process's commands), one worker draining a preloaded queue of no-op jobs, in three ways, A B C
// for several rounds, at concurrency 1 and 50:
//   plain                 a Worker with default options;
//   integrations, unused  the same Worker, and beside it what an app sets up and does not look at:
//                         a bull-board EchoMQAdapter on its Queue, the prom-client collector of its
//                         LockManager (collectLockMetrics, never scraped);
//   metrics               the same Worker with `metrics: { maxDataPoints: 10080 }` (a week).
// The measured phase is the drain and the worker's close (which sends the last metrics). Redis
// commands per job counts every command Redis ran (a script's inner commands under their own
// names), so the extra of a variant is the difference from plain, per 1,000 jobs.
import { cpus } from 'node:os';
import { Redis } from 'ioredis';
import { Registry } from 'prom-client';
import { Queue, Worker } from '../dist/lib/index.js';
import { EchoMQAdapter } from '../dist/lib/integrations/bull-board/index.js';
import { collectLockMetrics } from '../dist/lib/integrations/prometheus/index.js';
import { startRedis } from '../test/support/redis-process.js';
import { preload } from './add-scenarios.mjs';
import { check, measure } from './measure.mjs';
import { median, renderTable } from './stats.mjs';
import { connectionOf } from './systems.mjs';
import { Tally } from './tally.mjs';
import { verifyTally } from './verify.mjs';

const VARIANTS = [
  { id: 'plain', name: 'plain' },
  { id: 'unused', name: 'integrations, unused' },
  { id: 'metrics', name: 'metrics' },
];
const CONCURRENCIES = [1, 50];

function parseArgs(argv) {
  const args = { jobs: 10_000, rounds: 3 };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--jobs') args.jobs = Number(argv[++i]);
    else if (argv[i] === '--rounds') args.rounds = Number(argv[++i]);
    else throw new Error(`unknown argument ${argv[i]}; use --jobs N, --rounds N`);
  }
  return args;
}

let queueCounter = 0;

/** One drain of `total` preloaded jobs by one worker set up as `variant`: its figures. */
async function drain(variant, concurrency, url, meter, total) {
  const connection = connectionOf(url);
  const name = `obs-${process.pid}-${++queueCounter}`;
  const queue = new Queue(name, { connection });
  const tally = new Tally(total);
  const worker = new Worker(name, async (job) => { tally.ran(job.data.i); }, {
    connection, concurrency, autorun: false, ...(variant.id === 'metrics' ? { metrics: { maxDataPoints: 10_080 } } : {}),
  });
  worker.on('completed', () => tally.completed());
  worker.on('error', (error) => console.error(`${variant.name} worker error:`, error.message));
  let unused;
  if (variant.id === 'unused') {
    const registry = new Registry();
    unused = { adapter: new EchoMQAdapter(queue), lockMetrics: collectLockMetrics(worker.lockManager, { registry }) };
  }
  let closed = false;
  try {
    await preload(queue, total);
    const figures = await measure(meter, total, async () => {
      void worker.run();
      await tally.whenDone(120_000);
      await worker.close();
      closed = true;
    });
    verifyTally(tally);
    const completed = await meter.zcard(`emq:{${name}}:completed`);
    check(completed === total, `completed holds ${completed} jobs, expected ${total}`);
    if (variant.id === 'metrics') {
      const counted = Number(await meter.hget(`emq:{${name}}:metrics:completed`, 'count'));
      check(counted === total, `the metrics counted ${counted} jobs, expected ${total}`);
    }
    return figures;
  } finally {
    if (!closed) await worker.close(true);
    unused?.lockMetrics.stop();
    await queue.obliterate({ force: true });
    await queue.close();
  }
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const server = process.env.REDIS_URL ? undefined : await startRedis();
  const url = process.env.REDIS_URL ?? server.url;
  const meter = new Redis(connectionOf(url));
  const runs = new Map(); // `${concurrency}/${variant}` -> figures[]
  try {
    const version = (await meter.info('server')).match(/redis_version:(\S+)/)[1];
    console.log(`machine: ${cpus().length} CPUs, ${cpus()[0].model}; Node ${process.version}; Redis ${version} at ${url}`);
    console.log(`${args.jobs} jobs a run, ${args.rounds} rounds, variants A B C in turn\n`);
    for (const concurrency of CONCURRENCIES) for (const variant of VARIANTS) await drain(variant, concurrency, url, meter, 200); // warm-up
    for (let round = 1; round <= args.rounds; round++) {
      for (const concurrency of CONCURRENCIES) {
        for (const variant of VARIANTS) {
          const key = `${concurrency}/${variant.id}`;
          runs.set(key, [...(runs.get(key) ?? []), await drain(variant, concurrency, url, meter, args.jobs)]);
          process.stderr.write(`round ${round} concurrency ${concurrency} ${variant.name}: ok\n`);
        }
      }
    }
  } finally {
    meter.disconnect();
    await server?.stop();
  }
  const rows = [];
  for (const concurrency of CONCURRENCIES) {
    const of = (variant, figure) => median(runs.get(`${concurrency}/${variant.id}`).map((run) => run[figure]));
    const plain = of(VARIANTS[0], 'commandsPerJob');
    rows.push([`process, concurrency ${concurrency} (${args.jobs} jobs)`, '', '', '', '']);
    for (const variant of VARIANTS) {
      const commands = of(variant, 'commandsPerJob');
      rows.push([
        `  ${variant.name}`,
        commands.toFixed(4),
        variant === VARIANTS[0] ? '' : ((commands - plain) * 1000).toFixed(2),
        of(variant, 'redisCpuUsPerJob').toFixed(1),
        Math.round(of(variant, 'jobsPerSec')).toString(),
      ]);
    }
  }
  console.log(renderTable(['scenario / variant (median)', 'Redis commands/job', 'extra per 1,000 jobs', 'Redis CPU µs/job', 'jobs/s'], rows));
  console.log('\nCommands a run sent beyond plain\'s, by name (medians over the rounds; at concurrency 50 the batch sizes vary from run to run):');
  for (const concurrency of CONCURRENCIES) {
    const callsOf = (variant) => runs.get(`${concurrency}/${variant.id}`).map((run) => run.callsPerJob);
    const plain = callsOf(VARIANTS[0]);
    for (const variant of VARIANTS.slice(1)) {
      const calls = callsOf(variant);
      const names = [...new Set([...plain, ...calls].flatMap((byName) => Object.keys(byName)))].sort();
      const extra = names
        .map((name) => [name, Math.round((median(calls.map((c) => (c[name] ?? 0) * args.jobs)) - median(plain.map((c) => (c[name] ?? 0) * args.jobs))) * 10) / 10])
        .filter(([, n]) => n !== 0)
        .map(([name, n]) => `${name} ${n > 0 ? '+' : ''}${n}`);
      console.log(`  concurrency ${concurrency}, ${variant.name}: ${extra.length > 0 ? extra.join(', ') : 'none'}`);
    }
  }
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
