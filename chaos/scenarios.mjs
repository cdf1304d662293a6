// The scenarios (one fault each, and all mixed) and the two profiles: `ci` runs inside npm test,
// `full` is what `npm run chaos` runs by default.
import { killConnections, killHolder, killQueueMaster, pauseHolder, restartRedis, sleep } from './faults.mjs';

/** Lock timings shared by both profiles: short, so that lapses and sweeps happen within seconds. */
export const TIMING = { lockDuration: 2000, lockRenewTime: 1000, stalledInterval: 1500 };

/** Long enough for a frozen holder's locks to lapse and two sweeps to hand its jobs to another worker. */
export const FREEZE_MS = TIMING.lockDuration + 2 * TIMING.stalledInterval + 500;

export const PROFILES = {
  ci: { jobs: 60, waves: 6, waveGapMs: 500, workers: 3, concurrency: 3, workMs: [50, 250], rounds: 2, blockJobs: 1, drainTimeoutMs: 60_000 },
  full: { jobs: 400, waves: 20, waveGapMs: 500, workers: 4, concurrency: 4, workMs: [20, 300], rounds: 5, blockJobs: 3, drainTimeoutMs: 180_000 },
};

/** Repeats `fault` `rounds` times with a pause in between, so that it lands under load. */
async function repeat(rounds, gapMs, fault) {
  for (let i = 0; i < rounds; i++) {
    await sleep(gapMs);
    await fault();
  }
}

/** Every fault at once, each repeated under load. */
function allMixed(ctx, p) {
  return Promise.all([
    repeat(p.rounds, 900, () => killHolder(ctx)),
    repeat(1, 1200, () => pauseHolder(ctx, FREEZE_MS)),
    repeat(p.rounds * 2, 700, () => killConnections(ctx)),
    repeat(1, 2500, () => restartRedis(ctx, 500)),
  ]);
}

export const SCENARIOS = [
  { name: 'kill -9', inject: (ctx, p) => repeat(p.rounds, 700, () => killHolder(ctx)) },
  { name: 'SIGSTOP > lockDuration', inject: (ctx, p) => repeat(Math.ceil(p.rounds / 2), 500, () => pauseHolder(ctx, FREEZE_MS)) },
  { name: 'CLIENT KILL', inject: (ctx, p) => repeat(p.rounds * 3, 400, () => killConnections(ctx)) },
  { name: 'Redis restart (AOF)', inject: (ctx, p) => repeat(p.rounds, 900, () => restartRedis(ctx, 500)) },
  // The fault is in the jobs: their handler holds the event loop past lockDuration.
  { name: 'blocking handler', blocking: true, inject: async () => undefined },
  { name: 'all mixed', blocking: true, mixed: true, inject: allMixed },
  // The same faults on a queue spread over 4 partitions (one wake channel each, a worker taking
  // from all of them in turn): a wake-up lost to a cut connection or a restart must not strand a job.
  { name: 'all mixed on 4 partitions', blocking: true, mixed: true, partitions: 4, inject: allMixed },
  // On a Redis Cluster of its own (three masters, a replica each; chaos/run-failover.mjs): the
  // master serving the queue's slot dies under load and its replica is promoted; the workers are
  // not restarted. The second variant first cuts the replica off for 300 ms, so that writes the
  // master acknowledged are lost with it, as asynchronous replication allows.
  { name: 'failover (kill -9 of the queue master)', cluster: true, inject: (ctx, p) => sleep(p.waveGapMs * 2).then(() => killQueueMaster(ctx)) },
  {
    name: 'failover (replica behind)',
    cluster: true,
    inject: (ctx, p) => sleep(p.waveGapMs * 2).then(() => killQueueMaster(ctx, { behindMs: 300 })),
  },
];
