// npm run bench [-- --quick] [--rounds N] [--only text[|text...]] [--breakdown]
// EchoMQ (the built dist/) against BullMQ on one Redis: each scenario for each system in turn,
// A B A B, for several rounds; prints the medians and the ratio EchoMQ / BullMQ.
// Opt-in (--only names them): scenarios on a Redis Cluster of their own that compare two ways of
// running EchoMQ (e.g. `--only partitions`: a plain queue against a partitioned one), A B A B too.
import { constants, cpus } from 'node:os';
import { Redis } from 'ioredis';
import { startRedis } from '../test/support/redis-process.js';
import { addBulk, addConcurrent, addOne } from './add-scenarios.mjs';
import { requestFloor } from './request-floor.mjs';
import { processConcurrency1, processConcurrency1Prefetch, processConcurrency50, processFourProcesses, processFourProcessesWithRetention, processWithRetention, RETENTIONS } from './process-scenarios.mjs';
import { addToStart, delayedFiring, schedulerFiring } from './latency-scenarios.mjs';
import { CheckFailed } from './measure.mjs';
import { flow } from './flow-scenario.mjs';
import { partitions } from './partition-scenario.mjs';
import { sandboxedProcesses, sandboxedThreads } from './sandbox-scenarios.mjs';
import { settingScenarios } from './setting-scenarios.mjs';
import { formatNumber, median, renderTable } from './stats.mjs';
import { connectionOf, SYSTEMS } from './systems.mjs';

const SIZES = {
  quick: { rounds: 3, addOne: 2000, addConcurrent: 5000, addBulk: 10000, process1: 5000, process50: 10000, processes4: 10000, latency: 300, delayed: 100, scheduler: 50, partitions: 10000, sandboxed: 10000, flows: 10 },
  full: { rounds: 5, addOne: 5000, addConcurrent: 20000, addBulk: 50000, process1: 10000, process50: 30000, processes4: 30000, latency: 1000, delayed: 300, scheduler: 100, partitions: 30000, sandboxed: 30000, flows: 30 },
};
/** The default set: EchoMQ against BullMQ on one redis-server. */
const SCENARIOS = [addOne, addConcurrent, addBulk, processConcurrency1, requestFloor, processConcurrency50, processFourProcesses, ...processWithRetention, ...processFourProcessesWithRetention, ...processConcurrency1Prefetch, addToStart, delayedFiring, schedulerFiring, sandboxedThreads, sandboxedProcesses, flow];
/**
 * Opt-in, run only when --only names them (`--only settings`): EchoMQ against BullMQ in settings
 * beyond the defaults, so the default run stays as long as it was.
 */
const OPT_IN_SCENARIOS = [...settingScenarios];
/**
 * Opt-in, run only when --only names them: each starts a Redis Cluster of its own (three
 * redis-servers more on a 2-core machine, and a minute or more), and compares EchoMQ with itself.
 */
const CLUSTER_SCENARIOS = [partitions];
const THROUGHPUT_FIGURES = [
  ['jobsPerSec', 'jobs/s'], ['redisCpuUsPerJob', 'Redis CPU µs/job'], ['commandsPerJob', 'Redis commands/job'], ['nodeCpuUsPerJob', 'Node CPU µs/job'],
];
const LATENCY_FIGURES = [['p50Ms', 'p50 ms'], ['p99Ms', 'p99 ms']];

function parseArgs(argv) {
  const args = { quick: false, rounds: undefined, only: undefined, breakdown: false };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--quick') args.quick = true;
    else if (argv[i] === '--breakdown') args.breakdown = true;
    else if (argv[i] === '--rounds') args.rounds = Number(argv[++i]);
    else if (argv[i] === '--only') args.only = argv[++i];
    else throw new Error(`unknown argument ${argv[i]}; use --quick, --rounds N, --only text, --breakdown`);
  }
  return args;
}

let queueCounter = 0;

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const sizes = { ...(args.quick ? SIZES.quick : SIZES.full) };
  const rounds = args.rounds ?? sizes.rounds;
  // --only: the scenarios whose name contains any of its texts, separated by | (names hold commas).
  const named = (s) => args.only.split('|').some((text) => s.name.includes(text));
  const scenarios = [...SCENARIOS.filter((s) => !args.only || named(s)), ...OPT_IN_SCENARIOS.filter((s) => args.only && named(s))];
  const clusterScenarios = CLUSTER_SCENARIOS.filter((s) => args.only && named(s));
  const failures = [];
  if (scenarios.length > 0 || clusterScenarios.length === 0) failures.push(...await runSystems(scenarios, args, sizes, rounds));
  for (const scenario of clusterScenarios) failures.push(...await runOnCluster(scenario, args, sizes, rounds));
  if (failures.length > 0) {
    console.log(`\n${failures.length} run(s) FAILED their self-check (not timed):\n  ${failures.join('\n  ')}`);
    process.exitCode = 1;
  }
}

/** The default set: every scenario for EchoMQ and BullMQ in turn, on one redis-server. Answers the failures. */
async function runSystems(scenarios, args, sizes, rounds) {
  const server = process.env.REDIS_URL ? undefined : await startRedis();
  const url = process.env.REDIS_URL ?? server.url;
  const meter = new Redis(connectionOf(url));
  const ctx = { url, meter, sizes, timeoutMs: 120_000, queueName: () => `bench-${process.pid}-${++queueCounter}` };
  const systems = [SYSTEMS.echomq, SYSTEMS.bullmq];
  const results = new Map(); // scenario name -> system id -> array of figures
  const failures = [];
  try {
    const version = (await meter.info('server')).match(/redis_version:(\S+)/)[1];
    console.log(`machine: ${cpus().length} CPUs, ${cpus()[0].model}; Node ${process.version}; Redis ${version} at ${url}`);
    console.log(`${args.quick ? 'quick' : 'full'} run, ${rounds} rounds, sizes ${JSON.stringify({ ...sizes, partitions: undefined })}\n`);
    await warmUp(systems, ctx);
    for (let round = 1; round <= rounds; round++) {
      for (const scenario of scenarios) {
        for (const system of systems) {
          if (server) await meter.flushdb(); // our own server only: each run starts from an empty Redis
          const started = Date.now();
          let outcome;
          try {
            outcome = await scenario.run(system, ctx);
          } catch (error) {
            outcome = failedOutcome(error);
            failures.push(`round ${round}, ${scenario.name}, ${system.name}: ${outcome.failed}`);
          }
          const bySystem = results.get(scenario.name) ?? new Map();
          results.set(scenario.name, bySystem);
          bySystem.set(system.id, [...(bySystem.get(system.id) ?? []), outcome]);
          process.stderr.write(`round ${round} ${scenario.name} ${system.name}: ${outcome.failed ? 'FAILED' : 'ok'} (${Date.now() - started} ms)\n`);
        }
      }
    }
  } finally {
    meter.disconnect();
    await server?.stop();
  }
  console.log(renderTable(['scenario / figure (median)', 'EchoMQ', 'BullMQ', 'EchoMQ/BullMQ'], tableRows(scenarios, results, sizes)));
  if (args.breakdown) printBreakdown(scenarios, results);
  return failures;
}

/**
 * An opt-in scenario: its cluster is started here and stopped whatever happens; its variants run
 * A B A B for the rounds, each on an emptied cluster; it renders its own table. Answers the failures.
 */
async function runOnCluster(scenario, args, sizes, rounds) {
  const env = await scenario.setUp();
  const runs = new Map(scenario.variants.map((variant) => [variant.id, []])); // variant id -> array of figures
  const failures = [];
  // Stopped by a signal, the bench still stops the cluster: its redis-servers would outlive it.
  const onSignal = (signal) => void env.stop().finally(() => process.exit(128 + constants.signals[signal]));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const version = (await env.cluster.meters[0].info('server')).match(/redis_version:(\S+)/)[1];
    console.log(`machine: ${cpus().length} CPUs, ${cpus()[0].model}; Node ${process.version}; Redis ${version}, a cluster of ${env.cluster.meters.length} masters at ${env.cluster.seeds}`);
    console.log(`${scenario.name}: ${args.quick ? 'quick' : 'full'} run, ${rounds} rounds, ${scenario.size(sizes)} jobs\n`);
    await scenario.warmUp(env);
    for (let round = 1; round <= rounds; round++) {
      for (const variant of scenario.variants) {
        await env.cluster.flush();
        const started = Date.now();
        let outcome;
        try {
          outcome = await scenario.run(variant, env, sizes, 120_000);
        } catch (error) {
          outcome = failedOutcome(error);
          failures.push(`round ${round}, ${scenario.name}, ${variant.name}: ${outcome.failed}`);
        }
        runs.get(variant.id).push(outcome);
        process.stderr.write(`round ${round} ${scenario.name} ${variant.name}: ${outcome.failed ? 'FAILED' : 'ok'} (${Date.now() - started} ms)\n`);
      }
    }
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await env.stop();
  }
  console.log(renderTable(scenario.header, scenario.rows(runs, sizes)));
  if (args.breakdown) {
    for (const { title, header, rows } of scenario.breakdown(runs)) console.log(`\n${title}\n${renderTable(header, rows)}`);
  }
  return failures;
}

function failedOutcome(error) {
  return { failed: error instanceof CheckFailed ? error.message : `error: ${error.stack ?? error}` };
}

/** A few jobs through each system first, so script loading and JIT warm-up are not timed. */
async function warmUp(systems, ctx) {
  const sizes = ctx.sizes;
  ctx.sizes = { ...sizes, addOne: 50, process50: 200, latency: 5 };
  for (const system of systems) for (const scenario of [addOne, processConcurrency50, addToStart]) await scenario.run(system, ctx);
  ctx.sizes = sizes;
}

/** The median over runs of a figure: its name, or a function of a run. NaN when a run failed. */
function medianOf(runs, figure) {
  if (!runs || runs.some((run) => run.failed)) return NaN;
  return median(runs.map((run) => (typeof figure === 'function' ? figure(run) : run[figure])));
}

function tableRows(scenarios, results, sizes) {
  const rows = [];
  const row = (label, echo, bull) => rows.push([label, formatNumber(echo), formatNumber(bull), Number.isFinite(echo / bull) ? `${(echo / bull).toFixed(2)}x` : '-']);
  for (const scenario of scenarios) {
    const bySystem = results.get(scenario.name);
    const echoRuns = bySystem.get('echomq');
    const bullRuns = bySystem.get('bullmq');
    const failed = [echoRuns, bullRuns].map((runs) => runs.filter((run) => run.failed).length);
    rows.push([`${scenario.name} (${scenario.size(sizes)} ${scenario.unit ?? 'jobs'})`, failed[0] ? `FAILED ${failed[0]}` : '', failed[1] ? `FAILED ${failed[1]}` : '', '']);
    for (const [figure, label] of scenario.figures ?? (scenario.latency ? LATENCY_FIGURES : THROUGHPUT_FIGURES)) {
      row(`  ${label}`, medianOf(echoRuns, figure), medianOf(bullRuns, figure));
    }
  }
  // Redis CPU per job from its add to its finish, for each retention setting run (issue 17's goal).
  const cpu = (name, id) => medianOf(results.get(name)?.get(id), 'redisCpuUsPerJob');
  // EchoMQ with prefetch 1 is set against BullMQ at concurrency 1 (which has no prefetch).
  const processings = [[processConcurrency50.name, 'c50'], [processConcurrency1.name, 'c1'], [`${processConcurrency1.name}, EchoMQ prefetch 1`, 'c1, EchoMQ prefetch 1']];
  for (const { label } of RETENTIONS) {
    for (const [name, short] of processings) {
      const processing = `${name}${label}`;
      if (!results.has(processing) || !results.has(addConcurrent.name)) continue;
      const combined = (id) => cpu(addConcurrent.name, id) + cpu(processing, id);
      row(`Redis CPU µs/job, add concurrently + process ${short}${label}`, combined('echomq'), combined('bullmq'));
      if (short === 'c1' && results.has(requestFloor.name)) {
        // The least a worker of one request a job could read with these commands: its adds, the
        // request alone, and its commands' own time with none of the Lua around them; against
        // BullMQ's reading above (bench/README.md, "The floor under c1's Redis CPU").
        const lowest = cpu(addConcurrent.name, 'echomq') + cpu(requestFloor.name, 'echomq') + medianOf(results.get(processing).get('echomq'), commandsUs);
        row(`  lowest with one request a job: add + the request alone + the commands of process ${short}${label}`, lowest, combined('bullmq'));
      }
    }
  }
  return rows;
}

/** Script calls and script loading as INFO commandstats names them: what is not a command a script ran. */
const SCRIPT_CALL = /^(eval|evalsha|fcall)(_ro)?$|^script\|/;

/**
 * A run's Redis µs a job in commands other than script calls: the commands its scripts ran, with
 * none of the Lua around them (a worker's own few commands, well under 0.01 µs a job, count too).
 */
function commandsUs(run) {
  return Object.entries(run.usecPerJob).reduce((sum, [name, us]) => (SCRIPT_CALL.test(name) ? sum : sum + us), 0);
}

/**
 * Per command name, calls and Redis µs per job (INFO commandstats). EVALSHA's µs include its inner
 * commands', which are listed again under their own names: EVALSHA minus the rest is Lua's own time.
 */
function printBreakdown(scenarios, results) {
  for (const scenario of scenarios.filter((s) => !s.latency)) {
    console.log(`\n${scenario.name}: Redis commands per job, calls and µs (last round)`);
    const last = (id, figure) => results.get(scenario.name).get(id).at(-1)[figure] ?? {};
    const [echoCalls, echoUsec, bullCalls, bullUsec] = [['echomq', 'callsPerJob'], ['echomq', 'usecPerJob'], ['bullmq', 'callsPerJob'], ['bullmq', 'usecPerJob']].map(([id, f]) => last(id, f));
    const names = [...new Set([...Object.keys(echoUsec), ...Object.keys(bullUsec)])].sort((a, b) => (echoUsec[b] ?? 0) + (bullUsec[b] ?? 0) - (echoUsec[a] ?? 0) - (bullUsec[a] ?? 0));
    const cells = (calls, usec, n) => [formatNumber(calls[n] ?? 0), formatNumber(usec[n] ?? 0)];
    console.log(renderTable(['command', 'EchoMQ calls', 'EchoMQ µs', 'BullMQ calls', 'BullMQ µs'],
      names.map((n) => [n, ...cells(echoCalls, echoUsec, n), ...cells(bullCalls, bullUsec, n)])));
  }
}

// The private redis-server child is unref'd, so while main() waits for it to exit nothing else
// would keep the event loop alive: hold it open until main() is done.
const keepAlive = setInterval(() => {}, 1000);
try {
  await main();
} finally {
  clearInterval(keepAlive);
}
