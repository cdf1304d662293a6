// One measured phase: wall time, Redis CPU and commands, and this Node process's CPU, per job.
import { performance } from 'node:perf_hooks';
import { delta, snapshot } from './redis-meter.mjs';

/** A failed self-check: the run is reported as failed, never timed. */
export class CheckFailed extends Error {}

/** Throws CheckFailed with `message` unless `condition` holds. */
export function check(condition, message) {
  if (!condition) throw new CheckFailed(message);
}

/**
 * Runs `body` (which does `jobs` jobs of work) between two readings. `body` may return
 * { nodeCpuMicros } when the work ran in other processes (then their CPU is what counts).
 */
export async function measure(meterClient, jobs, body) {
  const { seconds, nodeCpuMicros, redis: [redis] } = await timed([meterClient], body);
  return {
    jobsPerSec: jobs / seconds,
    redisCpuUsPerJob: redis.cpuMicros / jobs,
    commandsPerJob: redis.commands / jobs,
    nodeCpuUsPerJob: nodeCpuMicros / jobs,
    ...perCommand(redis, jobs),
  };
}

/**
 * measure() over the masters of a Redis Cluster, one meter connection each: every master's CPU
 * per job (in the meters' order), the busiest master's and their sum; commands summed over them.
 */
export async function measureMasters(meterClients, jobs, body) {
  const { seconds, nodeCpuMicros, redis } = await timed(meterClients, body);
  const cpuByMaster = redis.map((master) => master.cpuMicros / jobs);
  return {
    jobsPerSec: jobs / seconds,
    redisCpuUsPerJobByMaster: cpuByMaster,
    busiestRedisCpuUsPerJob: Math.max(...cpuByMaster),
    totalRedisCpuUsPerJob: cpuByMaster.reduce((sum, cpu) => sum + cpu, 0),
    commandsPerJob: redis.reduce((sum, master) => sum + master.commands, 0) / jobs,
    nodeCpuUsPerJob: nodeCpuMicros / jobs,
    byMaster: redis.map((master) => perCommand(master, jobs)),
  };
}

/** Wall time, this process's CPU (or what `body` reports) and each server's delta over `body`. */
async function timed(meterClients, body) {
  const before = await Promise.all(meterClients.map(snapshot));
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  const reported = (await body()) ?? {};
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  const after = await Promise.all(meterClients.map(snapshot));
  return { seconds, nodeCpuMicros: reported.nodeCpuMicros ?? cpu.user + cpu.system, redis: after.map((reading, i) => delta(before[i], reading)) };
}

/** Calls and Redis µs per job, by command name (INFO commandstats). */
function perCommand(redis, jobs) {
  return {
    callsPerJob: Object.fromEntries(Object.entries(redis.calls).map(([name, n]) => [name, n / jobs])),
    usecPerJob: Object.fromEntries(Object.entries(redis.usec).map(([name, n]) => [name, n / jobs])),
  };
}

/** Resolves once `predicate()` holds, polling; rejects with CheckFailed after `timeoutMs`. */
export async function until(predicate, what, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new CheckFailed(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}
