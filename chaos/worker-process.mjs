// One chaos worker: a child process of the harness that runs the BUILT library and writes a ledger
// line (JSON, one per line, appended synchronously so a kill -9 never leaves half a line) for
// everything its handler and its Worker do. The harness reads the ledgers to check the run.
import { appendFileSync } from 'node:fs';
import { Redis } from 'ioredis';

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

// The handler's own side effect, fenced by job.attemptsStarted: a write carrying a lower fencing
// number than one already stored is refused, so a stale owner cannot overwrite a newer result.
const sink = new Redis(config.redisUrl, { maxRetriesPerRequest: null });
sink.on('error', () => undefined);
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

async function handle(job) {
  const fence = job.attemptsStarted;
  record({ type: 'start', id: job.id, ats: fence });
  // Only the first attempt blocks: the retry that another worker runs must be able to finish.
  if (job.data.blockMs && fence === 1) {
    record({ type: 'block', id: job.id, ats: fence });
    blockEventLoop(job.data.blockMs);
  } else {
    await sleep(job.data.workMs);
  }
  const written = await sink.fencedWrite(config.sinkKey, job.id, fence);
  record({ type: 'end', id: job.id, ats: fence, sinkAccepted: written === 1 });
  return { worker: config.name, ats: fence };
}

const worker = new Worker(config.queue, handle, { connection: config.redisUrl, ...config.workerOptions });
worker.on('completed', (job) => record({ type: 'accepted', id: job.id, ats: job.attemptsStarted }));
worker.on('lockLost', (job, error) => record({ type: 'refused', id: job.id, ats: job.attemptsStarted, code: error.code ?? null, error: error.message }));
worker.on('failed', (job, error) => record({ type: 'failed', id: job.id, ats: job.attemptsStarted, error: error.message }));
worker.on('error', (error) => record({ type: 'error', error: String(error?.message ?? error) }));

process.on('SIGTERM', async () => {
  await worker.close();
  await sink.quit().catch(() => undefined);
  record({ type: 'closed' });
  process.exit(0);
});

await worker.waitUntilReady();
record({ type: 'ready', pid: process.pid });
