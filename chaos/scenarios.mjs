// The scenarios (one fault each, and all mixed) and the two profiles: `ci` runs inside npm test,
// `full` is what `npm run chaos` runs by default.
import { cancelAround } from './cancels.mjs';
import { closeHolder, killAroundMoves, killAtSlotBoundaries, killConnections, killHolder, killQueueMaster, pauseHolder, restartRedis, sleep } from './faults.mjs';

/** Lock timings shared by both profiles: short, so that lapses and sweeps happen within seconds. */
export const TIMING = { lockDuration: 2000, lockRenewTime: 1000, stalledInterval: 1500 };

/**
 * The job scheduler scenario's lock timings: shorter still, so that a job whose worker was killed
 * runs again within lockDuration + stalledInterval, a few of its 200 ms slots later.
 */
export const SCHEDULER_TIMING = { lockDuration: 1000, lockRenewTime: 500, stalledInterval: 500 };

/** Long enough for a frozen holder's locks to lapse and two sweeps to hand its jobs to another worker. */
export const FREEZE_MS = TIMING.lockDuration + 2 * TIMING.stalledInterval + 500;

export const PROFILES = {
  ci: { jobs: 60, waves: 6, waveGapMs: 500, workers: 3, concurrency: 3, workMs: [50, 250], rounds: 2, blockJobs: 1, schedulerSlots: 50, drainTimeoutMs: 60_000 },
  full: { jobs: 400, waves: 20, waveGapMs: 500, workers: 4, concurrency: 4, workMs: [20, 300], rounds: 5, blockJobs: 3, schedulerSlots: 150, drainTimeoutMs: 180_000 },
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
  // A job scheduler firing every 200 ms (chaos/run-scheduler.mjs), upserted by 3 app processes at
  // the same moment, on 10 Workers in 4 processes (3 + 3 + 2 + 2), one of which is killed -9 a few
  // ms before or after every second slot and replaced: each slot must run once, none skipped.
  {
    name: 'job schedulers: kill -9 at slot boundaries',
    scheduler: { every: 200, processes: [3, 3, 2, 2], apps: 3, workMs: [20, 260] },
    inject: (ctx, slots) => killAtSlotBoundaries(ctx, slots),
  },
  // Handlers that move their own jobs out of active (checks: chaos/move-checks.mjs): every third job
  // runs in two steps (updateData, moveToDelayed for 50-300 ms, DelayedError), every third from the
  // second meets a 429 once (updateData, worker.rateLimit for 20-100 ms, RateLimitError). Worker
  // processes are killed -9 0 to 30 ms after a handler ledgered that it is about to move its job
  // (before the writes land, in flight, after), and at random moments, in turn, once the fleet is whole.
  {
    name: 'step jobs and 429s: kill -9 mid-move',
    moves: { stepDelayMs: [50, 300], limitMs: [20, 100] },
    // Waves further apart than the profile's: each aimed kill waits for a whole fleet (a fresh
    // process ready) and then for a move of the other kind. A CI run once spent the ci profile's
    // 3 s of waves on the first kill's respawn, and no 429 came after it (no kill around a give-back).
    load: { waveGapMs: 1200 },
    inject: (ctx, p) => killAroundMoves(ctx, { kills: p.rounds * 3, minReady: p.workers }),
  },
  // queue.cancelJob from the harness (chaos/cancels.mjs, checks: chaos/cancel-checks.mjs): every
  // third job, running 4 s with attempts left, one in two delayed 0.5 to 2 s, is cancelled at a random
  // moment within 2.5 s of its add (delayed, waiting, running); one in two of the cancels that find
  // their job running is followed 0 to 15 ms later by a kill -9 of its holder, and one target in
  // six is killed first (its holder, as it runs) and cancelled past lockDuration.
  {
    name: 'cancels: kill -9 around cancelJob',
    // 4 s: a cancel sent up to 2.5 s into a run reaches its worker (within lockRenewTime + 100 ms)
    // before the handler could end; a job that completes anyway was missed, not late.
    cancels: { workMs: 4000, delayMs: [500, 2000] },
    inject: (ctx, p) => cancelAround(ctx, { windowMs: 2500, minReady: p.workers, lockDuration: TIMING.lockDuration }),
  },
  // Workers with prefetch (docs/prefetch.md): one handler each and two more jobs held locked, not
  // started. Holders are killed -9 (held jobs lapse and are swept back like running ones) and
  // closed in order (running jobs end, held ones go back to wait unstarted by
  // moveJobFromActiveToWait-11), each replaced at once. `givenBack` counts the held jobs given back.
  {
    name: 'prefetch: kill -9 and close',
    workerOptions: { concurrency: 1, prefetch: 2 },
    inject: (ctx, p) => Promise.all([
      repeat(p.rounds, 900, () => killHolder(ctx)),
      repeat(p.rounds * 2, 500, () => closeHolder(ctx)),
    ]),
  },
  // Jobs that fail their first attempt (checks: chaos/retry-checks.mjs): two in three, with
  // attempts 3, one in two of those with a fixed backoff of `backoffMs` (to delayed). A worker's
  // retries go with its finishes in one finishJobs-13 call. Worker processes are killed -9 0 to 6 ms
  // after a handler ledgered that it is about to throw (before its retry is sent, in flight,
  // after), and at random moments, in turn, while connections are cut (a retry's reply lost and
  // the call sent again must count the attempt once).
  {
    name: 'retries: kill -9 and CLIENT KILL around batched retries',
    retries: { backoffMs: 100 },
    inject: (ctx, p) => Promise.all([
      killAroundMoves(ctx, { kills: p.rounds * 3, minReady: p.workers, types: ['retrying', 'retrying', 'random'] }),
      repeat(p.rounds * 2, 600, () => killConnections(ctx)),
    ]),
  },
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
