// The seed's lock timeline, on a real redis-server: one long job under a renew interval you pick,
// a second worker sweeping beside it. Under lockDuration the job stays owned; at or over it the
// lock lapses, a sweep moves the job back to wait and the second worker takes it over.
//   npm run demo:locks -- --renew 1500      (owned: every renewal re-sets the 3000 ms TTL)
//   npm run demo:locks -- --renew 4000      (lapses: stall, takeover, the first worker loses it)
// A renew interval at or over lockDuration is refused by normal options; the demo uses the
// documented escape hatch `unsafeLockRenewTime` (docs/locks.md). Options: --job <ms> (default 8000).
import { Redis } from 'ioredis';
import { Keys, LockManager, Queue, Worker } from '../dist/lib/index.js';
import { startRedis } from '../test/support/redis-process.js';

const LOCK_DURATION = 3000;
const STALLED_INTERVAL = 1000;

function option(name, fallback) {
  const at = process.argv.indexOf(`--${name}`);
  if (at < 0) return fallback;
  const value = Number(process.argv[at + 1]);
  if (!Number.isInteger(value) || value <= 0) {
    console.error(`--${name} takes a whole number of ms above 0, got ${process.argv[at + 1]}`);
    process.exit(2);
  }
  return value;
}

const renewEvery = option('renew', LOCK_DURATION / 2);
const jobMs = option('job', 8000);
const started = Date.now();
const stamp = () => `+${String(Date.now() - started).padStart(6)} ms`;
const say = (who, what) => console.log(`${stamp()}  ${who.padEnd(8)} ${what}`);

const redis = await startRedis();
const probe = new Redis(redis.url);
const lockManager = new LockManager();
const queueName = 'demo-locks';
const keys = new Keys(queueName);
const queue = new Queue(queueName, { connection: redis.url });
const names = new Map();
const who = (workerId) => names.get(workerId) ?? workerId.slice(0, 8);

/** The long job: works in steps, and stops as soon as its signal says the lock is gone. */
const longJob = (label) => async (job, { signal }) => {
  const until = Date.now() + jobMs;
  while (Date.now() < until) {
    if (signal.aborted) throw signal.reason;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return `done by ${label}`;
};

lockManager.acquired$.subscribe((e) => say(who(e.workerId), `acquired job ${e.jobId} (attempt ${e.attemptsStarted}), lock TTL ${LOCK_DURATION} ms`));
lockManager.renewed$.subscribe((e) => {
  void probe.pttl(keys.lock(e.jobIds[0])).then((pttl) => say(who(e.workerId), `renewed job ${e.jobIds.join(', ')}: PTTL ${pttl} ms (round trip ${e.roundTripMs} ms)`));
});
lockManager.renewalFailed$.subscribe((e) => say(who(e.workerId), `renewal FAILED for job ${e.jobId}: ${e.code} (${e.reason}); its signal is aborted`));
lockManager.stalled$.subscribe((e) => say(who(e.workerId), `sweep: job ${e.jobId} stalled (stc ${e.stalledCount}), moved to ${e.movedTo}`));
lockManager.heartbeatLate$.subscribe((e) => say(who(e.workerId), `heartbeat late by ${e.lateByMs} ms, margin ${e.marginMs} ms`));

const timing = renewEvery >= LOCK_DURATION ? { unsafeLockRenewTime: renewEvery } : { lockRenewTime: renewEvery };
console.log(`lockDuration ${LOCK_DURATION} ms, renew every ${renewEvery} ms, job runs ${jobMs} ms, stalledInterval ${STALLED_INTERVAL} ms`);
console.log(renewEvery < LOCK_DURATION
  ? 'expect: the lock is renewed before it lapses, the job completes on worker A\n'
  : 'expect: the lock lapses, a sweep moves the job back to wait, worker B takes it over\n');

const job = await queue.add('long', {});
say('queue', `added job ${job.id}`);
const common = { connection: redis.url, lockManager, lockDuration: LOCK_DURATION, stalledInterval: STALLED_INTERVAL };
const first = new Worker(queueName, longJob('A'), { ...common, ...timing });
names.set(first.id, 'worker A');
await new Promise((resolve) => first.once('active', resolve));
const second = new Worker(queueName, longJob('B'), common);
names.set(second.id, 'worker B');
say('worker B', 'started: sweeping every second, ready to take jobs');

// Watch the lock key itself, to show the moment it lapses.
let lastHolder = 'A';
const watch = setInterval(() => {
  void probe.pttl(keys.lock(job.id)).then((pttl) => {
    if (pttl === -2 && lastHolder !== 'none') {
      lastHolder = 'none';
      say('redis', `lock of job ${job.id} is gone (PTTL -2): nobody owns the job`);
    } else if (pttl > 0) lastHolder = 'someone';
  });
}, 50);

const outcome = new Promise((resolve) => {
  for (const worker of [first, second]) {
    worker.on('completed', (j, result) => { say(who(worker.id), `completed job ${j.id}: ${JSON.stringify(result)}`); resolve(result); });
    worker.on('lockLost', (j, error) => say(who(worker.id), `gave up job ${j.id}: ${error.message}`));
    worker.on('failed', (j, error) => say(who(worker.id), `job ${j.id} failed: ${error.message}`));
  }
});
await outcome;
clearInterval(watch);
await Promise.all([first.close(), second.close()]);
const stored = await queue.getJob(job.id);
console.log(`\nfinal: job ${job.id} ${await stored.getState()}, returnvalue ${JSON.stringify(stored.returnvalue)}, attempts started ${stored.attemptsStarted}, stalled ${stored.stalledCounter} time(s)`);
await lockManager.close();
await queue.close();
probe.disconnect();
await redis.stop();
