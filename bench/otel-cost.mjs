// npm run bench:otel [-- --rounds N] [--jobs N] [--concurrency N] [--baseline path/to/other/dist/lib/index.js]
// What tracing costs a worker: one worker draining a preloaded queue of no-op jobs (bench/README.md,
// "Tracing"), A B A B over the variants below, each on an emptied private redis-server:
//   baseline           another build (--baseline: e.g. the commit before tracing), no telemetry
//   no telemetry       this build, no `telemetry` option: what every user without it runs
//   EchoMQOtel, no SDK the option given, no tracer provider registered (spans are the API's no-ops)
//   EchoMQOtel + SDK   the option given, the SDK recording every span (a batch processor, an exporter
//                      that drops them: the export itself is the app's cost, not EchoMQ's)
// The jobs are preloaded (not timed) by a Queue with the variant's telemetry, so with it they carry a
// trace context, as in an app. Opt-in: not part of `npm run bench`.
import { cpus } from 'node:os';
import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';
import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { Redis } from 'ioredis';
import { startRedis } from '../test/support/redis-process.js';
import { EchoMQOtel } from '../dist/lib/integrations/otel/index.js';
import * as current from '../dist/lib/index.js';
import { preload } from './add-scenarios.mjs';
import { CheckFailed, measure } from './measure.mjs';
import { formatNumber, median, renderTable } from './stats.mjs';
import { Tally } from './tally.mjs';
import { verifyTally } from './verify.mjs';

const FIGURES = [['jobsPerSec', 'jobs/s'], ['commandsPerJob', 'Redis commands/job'], ['redisCpuUsPerJob', 'Redis CPU µs/job'], ['nodeCpuUsPerJob', 'Node CPU µs/job']];

function parseArgs(argv) {
  const args = { rounds: 5, jobs: 20_000, concurrency: 50, baseline: undefined };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--rounds') args.rounds = Number(argv[++i]);
    else if (argv[i] === '--jobs') args.jobs = Number(argv[++i]);
    else if (argv[i] === '--concurrency') args.concurrency = Number(argv[++i]);
    else if (argv[i] === '--baseline') args.baseline = argv[++i];
    else throw new Error(`unknown argument ${argv[i]}; use --rounds N, --jobs N, --concurrency N, --baseline path/to/dist/lib/index.js`);
  }
  return args;
}

/** Keeps nothing: the SDK records and batches every span, and the export is free. */
const droppingExporter = { export: (_spans, done) => done({ code: 0 }), shutdown: async () => undefined, forceFlush: async () => undefined };

/** An SDK as an app registers it; `stop()` unregisters it again, so the next variant runs without. */
function registerSdk() {
  const provider = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(droppingExporter)] });
  trace.setGlobalTracerProvider(provider);
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  return async () => {
    await provider.shutdown();
    trace.disable();
    context.disable();
    propagation.disable();
  };
}

function variants(args, baselineLib) {
  const list = [
    { id: 'none', name: 'no telemetry', lib: current, telemetry: () => undefined },
    // No provider: the API's spans are invalid ones, so there is no context for the jobs to carry.
    { id: 'api', name: 'EchoMQOtel, no SDK', lib: current, telemetry: () => new EchoMQOtel() },
    { id: 'sdk', name: 'EchoMQOtel + SDK', lib: current, telemetry: () => new EchoMQOtel(), sdk: true, carries: true },
  ];
  return baselineLib ? [{ id: 'baseline', name: 'baseline', lib: baselineLib, telemetry: () => undefined }, ...list] : list;
}

let queueCounter = 0;

async function runOnce(variant, url, meter, args) {
  const stopSdk = variant.sdk ? registerSdk() : undefined;
  const name = `otel-cost-${process.pid}-${++queueCounter}`;
  const telemetry = variant.telemetry();
  const withTelemetry = telemetry ? { telemetry } : {};
  const queue = new variant.lib.Queue(name, { connection: url, ...withTelemetry });
  const tally = new Tally(args.jobs);
  const worker = new variant.lib.Worker(name, async (job) => { tally.ran(job.data.i); }, { connection: url, concurrency: args.concurrency, autorun: false, ...withTelemetry });
  worker.on('completed', () => tally.completed());
  worker.on('error', (error) => console.error(`${variant.name}: worker error:`, error.message));
  try {
    await preload(queue, args.jobs);
    await worker.waitUntilReady();
    const figures = await measure(meter, args.jobs, async () => {
      void worker.run();
      await tally.whenDone(120_000);
    });
    await worker.close();
    verifyTally(tally);
    const carried = JSON.parse(await meter.hget(`emq:{${name}}:1`, 'opts')).telemetry !== undefined;
    if (carried !== (variant.carries === true)) throw new CheckFailed(`${variant.name}: a job ${carried ? 'carries' : 'does not carry'} a trace context`);
    return figures;
  } finally {
    await worker.close(true);
    await queue.close();
    await stopSdk?.();
  }
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const baselineLib = args.baseline ? await import(pathToFileURL(resolve(args.baseline)).href) : undefined;
  const server = await startRedis();
  const meter = new Redis(server.url);
  const list = variants(args, baselineLib);
  const runs = new Map(list.map((variant) => [variant.id, []]));
  try {
    const version = (await meter.info('server')).match(/redis_version:(\S+)/)[1];
    console.log(`machine: ${cpus().length} CPUs, ${cpus()[0].model}; Node ${process.version}; Redis ${version}`);
    console.log(`one worker at concurrency ${args.concurrency}, ${args.jobs} no-op jobs a run, ${args.rounds} rounds${args.baseline ? `; baseline: ${args.baseline}` : ''}\n`);
    for (const variant of list) await runOnce(variant, server.url, meter, { ...args, jobs: Math.min(args.jobs, 2000) }); // warm-up, not counted
    for (let round = 1; round <= args.rounds; round++) {
      for (const variant of list) {
        await meter.flushdb();
        const figures = await runOnce(variant, server.url, meter, args);
        runs.get(variant.id).push(figures);
        process.stderr.write(`round ${round} ${variant.name}: ${Math.round(figures.jobsPerSec)} jobs/s\n`);
      }
    }
  } finally {
    meter.disconnect();
    await server.stop();
  }
  const reference = list[0];
  const header = ['figure (median)', ...list.map((variant) => variant.name), ...list.slice(1).map((variant) => `${variant.name} / ${reference.name}`)];
  const rows = FIGURES.map(([key, label]) => {
    const medians = list.map((variant) => median(runs.get(variant.id).map((figures) => figures[key])));
    return [label, ...medians.map(formatNumber), ...medians.slice(1).map((value) => (value / medians[0]).toFixed(3))];
  });
  console.log(renderTable(header, rows));
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
