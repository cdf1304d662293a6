// One chaos worker: a child process of the harness that runs the BUILT library and writes a ledger
// line (JSON, one per line, appended synchronously so a kill -9 never leaves half a line) for
// everything its handler and its Worker do. The harness reads the ledgers to check the run.
import { appendFileSync } from 'node:fs';
import { Cluster, Redis } from 'ioredis';

const config = JSON.parse(process.argv[2]);
const { Worker } = await import(config.libPath);

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

async function handle(job, { token }) {
  const fence = job.attemptsStarted;
  tokens.set(job, token);
  record({ type: 'start', id: job.id, ats: fence, token });
  // Only the first attempt blocks: the retry that another worker runs must be able to finish.
  if (job.data.blockMs && fence === 1) {
    record({ type: 'block', id: job.id, ats: fence });
    blockEventLoop(job.data.blockMs);
  } else {
    await sleep(job.data.workMs);
  }
  const written = await sink.fencedWrite(config.sinkKey, job.id, fence);
  record({ type: 'end', id: job.id, ats: fence, token, sinkAccepted: written === 1 });
  return { worker: config.name, ats: fence, token };
}

const connection = config.cluster ? connect() : config.redisUrl;
const worker = new Worker(config.queue, handle, { connection, ...config.workerOptions });
worker.on('completed', (job) => record({ type: 'accepted', id: job.id, ats: job.attemptsStarted, token: tokens.get(job) }));
worker.on('lockLost', (job, error) => record({ type: 'refused', id: job.id, ats: job.attemptsStarted, token: tokens.get(job), code: error.code ?? null, error: error.message }));
worker.on('failed', (job, error) => record({ type: 'failed', id: job.id, ats: job.attemptsStarted, token: tokens.get(job), error: error.message }));
worker.on('error', (error) => record({ type: 'error', error: String(error?.message ?? error) }));

process.on('SIGTERM', async () => {
  await worker.close();
  await sink.quit().catch(() => undefined);
  if (typeof connection !== 'string') await connection.quit().catch(() => undefined);
  record({ type: 'closed' });
  process.exit(0);
});

await worker.waitUntilReady();
record({ type: 'ready', pid: process.pid });
