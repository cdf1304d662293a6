// One chaos worker: a child process of the harness that runs the BUILT library and writes a ledger
// line (JSON, one per line, appended synchronously so a kill -9 never leaves half a line) for
// everything its handler and its Worker do. The harness reads the ledgers to check the run.
import { appendFileSync } from 'node:fs';
import { Cluster, Redis } from 'ioredis';

const config = JSON.parse(process.argv[2]);
const { DelayedError, RateLimitError, Worker } = await import(config.libPath);

/** Appends one ledger record, stamped with this worker's name and the wall-clock time. */
function record(fields) {
  appendFileSync(config.ledgerFile, JSON.stringify({ w: config.name, t: Date.now(), ...fields }) + '\n');
}

// A crash the harness did not cause must be visible in the ledger, not just in a lost process.
process.on('unhandledRejection', (error) => {
  record({ type: 'crash', kind: 'unhandledRejection', error: String(error?.stack ?? error) });
  process.exit(70);
});
process.on('uncaughtException', (error) => {
  record({ type: 'crash', kind: 'uncaughtException', error: String(error?.stack ?? error) });
  process.exit(71);
});

/**
 * A connection to the scenario's Redis: a URL for one redis-server, or with `config.cluster`
 * ({ nodes, options }) an ioredis Cluster, which the Worker uses as it is and never closes.
 */
function connect() {
  const client = config.cluster
    ? new Cluster(config.cluster.nodes, config.cluster.options)
    : new Redis(config.redisUrl, { maxRetriesPerRequest: null });
  client.on('error', () => undefined); // a dead node or a restarting Redis: the commands are retried
  return client;
}

// The handler's own side effect, fenced by job.attemptsStarted: a write carrying a lower fencing
// number than one already stored is refused, so a stale owner cannot overwrite a newer result.
// Its key carries the queue's hash tag: on a Cluster it lives on the queue's master.
const sink = connect();
sink.defineCommand('fencedWrite', {
  numberOfKeys: 1,
  lua: `local stored = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
    if tonumber(ARGV[2]) < stored then return 0 end
    redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
    return 1`,
});

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Holds the event loop (no timer, no I/O) like a CPU-bound handler or a long GC pause. */
function blockEventLoop(ms) {
  const until = Date.now() + ms;
  while (Date.now() < until);
}

// Each run's lock token, by Job: the events after the run name it too. Across a failover that lost
// writes attemptsStarted can repeat, so the token is what tells two runs of a job apart.
const tokens = new WeakMap();
// The fencing number of each job this process runs now (a process holds a job once at a time):
// a lock's `released` event names the job only.
const current = new Map();

async function handle(job, { token }, worker) {
  const fence = job.attemptsStarted;
  tokens.set(job, token);
  record({ type: 'start', id: job.id, ats: fence, token });
  current.set(job.id, fence);
  // A job scheduler's jobs all carry the template's data: a [min, max] range gives each run its own time.
  const workMs = Array.isArray(job.data.workMs) ? job.data.workMs[0] + Math.floor(Math.random() * (job.data.workMs[1] - job.data.workMs[0])) : job.data.workMs;
  // Only the first attempt blocks: the retry that another worker runs must be able to finish.
  if (job.data.blockMs && fence === 1) {
    record({ type: 'block', id: job.id, ats: fence });
    blockEventLoop(job.data.blockMs);
  } else {
    await sleep(workMs);
  }
  // A job planned to fail once throws on its first attempt that reaches here: its retry goes with
  // the worker's finishes (finishJobs-13). `retrying` is ledgered first, for kills aimed at it.
  if (job.data.kind?.startsWith('retry') && job.attemptsMade === 0) {
    record({ type: 'retrying', id: job.id, ats: fence });
    throw new Error('chaos: the first attempt fails');
  }
  // A job run in steps leaves after its first one; a job that meets a 429 goes back once.
  if (job.data.kind === 'steps' && job.data.stepped === undefined) await moveToNextStep(job, token, fence);
  if (job.data.kind === 'limited' && job.data.limitedAt === undefined) await giveBackFor429(job, worker, fence);
  const written = await sink.fencedWrite(config.sinkKey, job.id, fence);
  record({ type: 'end', id: job.id, ats: fence, token, sinkAccepted: written === 1 });
  return { worker: config.name, ats: fence, token, ...(job.data.kind === 'steps' && { step: 2, stepped: job.data.stepped }) };
}

/**
 * Step 1 of a job run in steps, as docs/job-control.md shows it: the progress saved in the data
 * first (its run's fencing number), then the move to delayed under the run's token, then
 * DelayedError. `moving` is ledgered (with the due time asked) before anything is sent, so that
 * the harness can kill this process while the writes are in flight; `moved` once the move landed.
 */
async function moveToNextStep(job, token, fence) {
  const dueAt = Date.now() + job.data.stepDelayMs;
  record({ type: 'moving', id: job.id, ats: fence, dueAt });
  await job.updateData({ ...job.data, stepped: fence });
  await job.moveToDelayed(dueAt, token);
  record({ type: 'moved', id: job.id, ats: fence, dueAt });
  throw new DelayedError();
}

/**
 * An outside API answered 429: the mark saved in the data (so that the next run completes), the
 * queue stopped for a moment, the job given back unattempted (docs/limits.md). `limiting` is
 * ledgered before anything is sent; the give-back landing shows as a `left` record (released$).
 */
async function giveBackFor429(job, worker, fence) {
  record({ type: 'limiting', id: job.id, ats: fence });
  await job.updateData({ ...job.data, limitedAt: fence });
  await worker.rateLimit(job.data.limitMs);
  throw new RateLimitError();
}

const connection = config.cluster ? connect() : config.redisUrl;
// `workers` Worker instances in this process (default 1), each with its own connections and
// sweeps, as in an app that runs several: a kill -9 takes all of them at once.
const workers = Array.from({ length: config.workers ?? 1 }, () => {
  const worker = new Worker(config.queue, (job, context) => handle(job, context, worker), { connection, ...config.workerOptions });
  return worker;
});
for (const worker of workers) {
  // A job that left without finishing (moved to delayed, given back for a rate limit, retried): the
  // ledger takes the lock's release, sent once the move landed (a retry's `failed` event says no more).
  worker.lockManager.released$.subscribe((event) => {
    if (event.reason === 'delayed' || event.reason === 'requeued' || event.reason === 'retried') record({ type: 'left', id: event.jobId, ats: current.get(event.jobId), reason: event.reason });
  });
  worker.on('completed', (job) => record({ type: 'accepted', id: job.id, ats: job.attemptsStarted, token: tokens.get(job) }));
  worker.on('lockLost', (job, error) => record({ type: 'refused', id: job.id, ats: job.attemptsStarted, token: tokens.get(job), code: error.code ?? null, error: error.message }));
  worker.on('failed', (job, error) => record({ type: 'failed', id: job.id, ats: job.attemptsStarted, token: tokens.get(job), error: error.message }));
  worker.on('error', (error) => record({ type: 'error', error: String(error?.message ?? error) }));
  if (config.watchCancels || config.workerOptions.prefetch) {
    // Every pickup's fencing number: a pickup of a job already cancelled runs no handler, and a job
    // held ahead (prefetch) may be given back before it starts, so no `start` says it.
    worker.lockManager.acquired$.subscribe((event) => current.set(event.jobId, event.attemptsStarted));
  }
  if (config.workerOptions.prefetch) {
    // A job held ahead is locked from its pickup: a kill before it starts must return it too.
    worker.lockManager.acquired$.subscribe((event) => record({ type: 'pickup', id: event.jobId, ats: event.attemptsStarted }));
  }
  if (config.watchCancels) {
    // Each cancel as the worker acts on it: from its heartbeat or its pickup.
    worker.lockManager.cancelled$.subscribe((event) => record({ type: 'cancelled', id: event.jobId, ats: current.get(event.jobId), by: event.by, reason: event.reason }));
  }
}

process.on('SIGTERM', async () => {
  await Promise.all(workers.map((worker) => worker.close()));
  await sink.quit().catch(() => undefined);
  if (typeof connection !== 'string') await connection.quit().catch(() => undefined);
  record({ type: 'closed' });
  process.exit(0);
});

await Promise.all(workers.map((worker) => worker.waitUntilReady()));
record({ type: 'ready', pid: process.pid });
