#!/usr/bin/env node
// npm run chaos: runs every scenario (or those named with --only) against the built library and
// prints the table. Exit code 1 when any check failed. The failover scenarios need redis-cli and
// Redis 5+ for their cluster; without them they are skipped, with the reason printed.
//   node chaos/run.mjs [--profile ci|full] [--lib path/to/index.js] [--only name,...] [--json out.json] [--parallel N]
// --parallel N runs up to N scenarios at once (each has its own redis-servers and worker processes);
// the table and the JSON keep the scenarios' order.
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { cancelViolations, formatCancels } from './cancel-checks.mjs';
import { violations } from './checks.mjs';
import { failoverViolations } from './failover-checks.mjs';
import { undoAll, undoOnSignals } from './interrupt.mjs';
import { formatMoves, moveViolations } from './move-checks.mjs';
import { formatPrefetch, prefetchViolations } from './prefetch-checks.mjs';
import { formatRetries, retryViolations } from './retry-checks.mjs';
import { formatFailover, formatTable } from './report.mjs';
import { runFailoverScenario } from './run-failover.mjs';
import { runScenario } from './run-scenario.mjs';
import { runSchedulerScenario } from './run-scheduler.mjs';
import { PROFILES, SCENARIOS, TIMING } from './scenarios.mjs';
import { formatScheduler, schedulerViolations } from './scheduler-checks.mjs';

const { values } = parseArgs({
  options: {
    profile: { type: 'string', default: 'full' },
    lib: { type: 'string', default: 'dist/lib/index.js' },
    only: { type: 'string' },
    json: { type: 'string' },
    parallel: { type: 'string', default: '1' },
  },
});
const profile = PROFILES[values.profile];
if (!profile) throw new Error(`unknown profile ${values.profile}; use ${Object.keys(PROFILES).join(' or ')}`);
const libPath = pathToFileURL(resolve(values.lib)).href;
const only = values.only?.split(',');
const parallel = Number(values.parallel);
if (!Number.isInteger(parallel) || parallel < 1) throw new Error(`--parallel takes a whole number of scenarios at once, 1 or more, not ${values.parallel}`);
const scenarios = SCENARIOS.filter((s) => !only || only.includes(s.name));

console.log(`chaos profile ${values.profile}: ${profile.workers} worker processes × concurrency ${profile.concurrency}, ` +
  `${profile.jobs} jobs per scenario, lockDuration ${TIMING.lockDuration} ms, lockRenewTime ${TIMING.lockRenewTime} ms, stalledInterval ${TIMING.stalledInterval} ms`);
// redis-process.js unrefs its redis-server child: without a ref'd handle, awaiting its exit would
// leave the event loop empty and end this script mid-await.
const keepAlive = setInterval(() => undefined, 1000);
undoOnSignals();
const rows = new Array(scenarios.length);
async function runOne(scenario, index) {
  const started = Date.now();
  const run = scenario.cluster ? runFailoverScenario : scenario.scheduler ? runSchedulerScenario : runScenario;
  const row = await run(scenario, profile, libPath);
  if (row.skipped) {
    console.log(`${scenario.name}: skipped (${row.skipped})`);
    return;
  }
  // Overlapping faults (a kill while Redis restarts) add up, so the bound holds per single fault.
  if (scenario.cluster) row.problems = failoverViolations(row);
  else if (scenario.scheduler) row.problems = schedulerViolations(row);
  else if (scenario.moves) row.problems = moveViolations(row);
  else if (scenario.cancels) row.problems = cancelViolations(row);
  else if (scenario.retries) row.problems = retryViolations(row);
  else if (scenario.workerOptions?.prefetch) row.problems = prefetchViolations(row);
  else row.problems = violations(row, { expectRefusals: /SIGSTOP|blocking/.test(scenario.name), boundRecovery: !scenario.mixed });
  row.seconds = Math.round((Date.now() - started) / 100) / 10;
  rows[index] = row;
  console.log(`${scenario.name}: ${row.problems.length ? 'FAIL ' + row.problems.join('; ') : 'ok'} (${row.seconds} s)`);
  if (scenario.cluster) console.log(formatFailover(row));
  if (scenario.scheduler) console.log(formatScheduler(row));
  if (scenario.moves) console.log(formatMoves(row));
  if (scenario.cancels) console.log(formatCancels(row));
  if (scenario.retries) console.log(formatRetries(row));
  if (scenario.workerOptions?.prefetch) console.log(formatPrefetch(row));
}
// A pool of --parallel lanes, each taking the next scenario in order.
let next = 0;
const lanes = Array.from({ length: parallel }, async () => {
  while (next < scenarios.length) {
    const index = next++;
    await runOne(scenarios[index], index);
  }
});
try {
  await Promise.all(lanes);
} catch (error) {
  console.error(error);
  await undoAll();
  process.exit(1);
}
const ran = rows.filter(Boolean);
clearInterval(keepAlive);
console.log('\n' + formatTable(ran));
if (values.json) writeFileSync(values.json, JSON.stringify(ran, null, 2));
process.exit(ran.some((r) => r.problems.length) ? 1 : 0);
