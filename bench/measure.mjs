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
  const before = await snapshot(meterClient);
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  const reported = (await body()) ?? {};
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  const redis = delta(before, await snapshot(meterClient));
  const nodeCpuMicros = reported.nodeCpuMicros ?? cpu.user + cpu.system;
  return {
    jobsPerSec: jobs / seconds,
    redisCpuUsPerJob: redis.cpuMicros / jobs,
    commandsPerJob: redis.commands / jobs,
    nodeCpuUsPerJob: nodeCpuMicros / jobs,
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
