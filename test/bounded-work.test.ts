import { afterAll, afterEach, beforeAll, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { PerformanceObserver } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { randomUUID as uuid } from 'node:crypto';
import {
  Keys, Queue, Worker,
  type HeartbeatErrorEvent, type HeartbeatLateEvent, type LockRenewalFailedEvent, type LockRenewedEvent,
} from '../lib/index.js';
import { Scripts } from '../lib/internal.js';
import { startRedis, type RedisProcess } from './support/redis-process.js';
import { eventually, singleNodeDescribe, uniqueQueueName } from './support/redis.js';

// A script runs alone in Redis, so a long one stalls every worker's heartbeat. Here one queue
// trims, cleans and obliterates 200,000 jobs while a worker of another queue on the same Redis
// holds a job with lockDuration 2,000 ms: its renewals must go on as if nothing ran (no lost lock,
// no late tick, no renewal whose round trip or tick reaches lockDuration / 4). One call used to
// delete a whole backlog: a second for a trim of 200,000, a second and a half for a clean, and a
// clean of a 200,000-long list would have taken minutes (an LREM per id).
// Its own redis-server: 800,000 jobs come and go, and no other suite shares its Redis.

const JOBS = 200_000;
const LOCK_DURATION = 2000;
const BOUND = LOCK_DURATION / 4;

let server: RedisProcess;
let client: Redis;
let victim: Worker;
let victimQueue: Queue;
const renewed: LockRenewedEvent[] = [];
const failed: LockRenewalFailedEvent[] = [];
const late: HeartbeatLateEvent[] = [];
const errors: HeartbeatErrorEvent[] = [];
let releaseVictim!: () => void;

beforeAll(async () => {
  server = await startRedis();
  client = new Redis(server.url);
  const name = uniqueQueueName('victim');
  victimQueue = new Queue(name, { connection: server.url });
  const held = new Promise<void>((resolve) => (releaseVictim = resolve));
  victim = new Worker(name, () => held, {
    connection: server.url, lockDuration: LOCK_DURATION, lockRenewTime: 250, heartbeatLateThreshold: BOUND,
  });
  victim.lockManager.renewed$.subscribe((event) => renewed.push(event));
  victim.lockManager.renewalFailed$.subscribe((event) => failed.push(event));
  victim.lockManager.heartbeatLate$.subscribe((event) => late.push(event));
  victim.lockManager.heartbeatError$.subscribe((event) => errors.push(event));
  await victimQueue.add('hold', {});
  await eventually(() => renewed.length > 0, 10_000, 'the victim job held and renewed');
}, 30_000);

afterAll(async () => {
  releaseVictim?.();
  await victim?.close(true);
  await victimQueue?.close();
  client?.disconnect();
  await server?.stop();
});

/**
 * A queue on the private server, closed after its test whatever the outcome: one left open by a
 * failed expect would reconnect for ever once the server stops, and Jest would never exit.
 */
const opened: Queue[] = [];
function openQueue(name: string): Queue {
  const queue = new Queue(name, { connection: server.url });
  opened.push(queue);
  return queue;
}

afterEach(async () => {
  await Promise.all(opened.splice(0).map((queue) => queue.close()));
});

/**
 * `count` jobs added with addBulk to `queue`, left in wait. 5,000 a call: an addBulk prepares its
 * jobs and builds their Job objects synchronously, and 50,000 at once held this process's event
 * loop (the victim's heartbeat with it) for over two seconds on a loaded CI machine: the victim's
 * lock lapsed before the work under test began.
 */
async function addJobs(queue: Queue, count = JOBS): Promise<void> {
  for (let i = 0; i < count; i += 5_000) {
    await queue.addBulk(Array.from({ length: Math.min(5_000, count - i) }, (_, j) => ({ name: 'bulk', data: { j } })));
  }
}

/** Moves every id of wait to `state` (a zset), scored by add order: jobs that finished long ago. */
async function moveWaitTo(keys: Keys, state: 'completed' | 'failed'): Promise<void> {
  const moveChunk = `
    local ids = redis.call('LRANGE', KEYS[1], -2000, -1)
    if #ids == 0 then return 0 end
    redis.call('LTRIM', KEYS[1], 0, -(#ids + 1))
    local args = {}
    for i, id in ipairs(ids) do args[#args + 1] = i; args[#args + 1] = id end
    redis.call('ZADD', KEYS[2], unpack(args))
    return #ids`;
  while ((await client.eval(moveChunk, 2, keys.wait, keys.state(state))) as number > 0);
}

/**
 * A full garbage collection of this process, now. The victim's heartbeat runs in this process, and
 * the setup before each test builds 200,000 to 300,000 Job objects (addBulk's answers), garbage at
 * once. A tick came 715 ms late once in CI, in a full run (the Jest process's heap grown by the
 * suite's earlier files), and a full collection there takes about as long; run alone, the file saw
 * no GC pause of 50 ms or more. Collected before the work, the setup's garbage cannot pause it, and
 * a late tick names the pauses it coincided with.
 */
setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;

/** Runs `work` and checks the victim's heartbeat all along; returns what `work` returned. */
async function whileHeartbeatHolds<T>(work: () => Promise<T>): Promise<T> {
  collectGarbage();
  // The collection holds the event loop too (about 550 ms in a CI run): the tick it delayed fires
  // as soon as it ends, and must be recorded before the window opens. Longer than lockRenewTime.
  await new Promise((resolve) => setTimeout(resolve, 400));
  // The GC pauses of this process during the work, named beside a late tick if one comes.
  const pauses: number[] = [];
  const gcObserver = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) if (entry.duration >= 50) pauses.push(Math.round(entry.duration));
  });
  gcObserver.observe({ entryTypes: ['gc'] });
  const from = Date.now();
  const firstRenewal = renewed.length;
  const result = await work().finally(() => gcObserver.disconnect());
  const during = renewed.slice(firstRenewal);
  // The heartbeat ran while the work did; if it did not, say what the victim's heartbeat saw.
  // Late ticks are counted from the work's start: the setup's addBulk calls (200,000 Job objects
  // built in this process) may hold the event loop, which says nothing of the scripts under test.
  const lateDuring = late.filter((event) => event.at >= from);
  expect({ renewals: during.length > 0, lost: failed, errors: errors.map((e) => e.error.message), late: lateDuring.map((e) => `${e.lateByMs} ms (GC pauses of 50 ms or more meanwhile: ${pauses.join(', ') || 'none'})`) })
    .toEqual({ renewals: true, lost: [], errors: [], late: [] });
  const slow = during.filter((event) => event.roundTripMs >= BOUND || event.tickMs >= BOUND);
  expect({ slow: slow.map((e) => ({ roundTripMs: e.roundTripMs, tickMs: e.tickMs })) }).toEqual({ slow: [] });
  expect(failed.filter((event) => event.at >= from)).toEqual([]);
  return result;
}

// Single-node: a redis-server of its own (see above); a Cluster adds nothing, each queue is one slot.
singleNodeDescribe(`bounded work: ${JOBS} jobs of one queue, a held job of another`, () => {
  it('trims a backlog of finished jobs over the following finishes, 1000 a finish', async () => {
    const name = uniqueQueueName('trim');
    const queue = openQueue(name);
    const keys = new Keys(name);
    const scripts = new Scripts(client, keys, 10_000);
    await addJobs(queue);
    await moveWaitTo(keys, 'completed');
    // removeOnComplete lowered from keep-all to 10: every finish from now on trims.
    const finishes = await whileHeartbeatHolds(async () => {
      let count = 0;
      while ((await client.zcard(keys.completed)) > 10) {
        const { jobId } = await scripts.addJob({ name: 'x', data: '{}', opts: '{}', timestamp: Date.now(), delay: 0, priority: 0, lifo: false });
        const token = uuid();
        await scripts.moveToActive(token, 30_000, Date.now());
        await scripts.moveToFinished({
          jobId, token, timestamp: Date.now(), outcome: 'completed', value: '1', stacktrace: '', keepCount: 10, keepAgeMs: 0,
        });
        count++;
      }
      return count;
    });
    expect(finishes).toBe(Math.ceil((JOBS - 10) / 999)); // each finish adds one and deletes up to 1000
    expect(await client.dbsize()).toBeLessThan(100); // the trimmed jobs' hashes went with them
    await queue.obliterate();
    await queue.close();
  }, 120_000);

  it('cleans finished jobs (a zset), up to a limit and then the rest', async () => {
    const queue = openQueue(uniqueQueueName('clean-z'));
    await addJobs(queue);
    await moveWaitTo(queue.keys, 'completed');
    const [some, rest] = await whileHeartbeatHolds(async () => [
      await queue.clean(0, 150_000, 'completed'),
      await queue.clean(0, 0, 'completed'),
    ]);
    expect([some.length, rest.length]).toEqual([150_000, JOBS - 150_000]);
    expect(new Set([...some, ...rest]).size).toBe(JOBS);
    expect(await client.exists(queue.keys.completed)).toBe(0);
    await queue.obliterate();
    await queue.close();
  }, 120_000);

  it('cleans waiting jobs (a list)', async () => {
    const queue = openQueue(uniqueQueueName('clean-l'));
    await addJobs(queue);
    const removed = await whileHeartbeatHolds(() => queue.clean(0, 0, 'wait'));
    expect(removed).toHaveLength(JOBS);
    expect(await client.exists(queue.keys.wait, queue.keys.job(removed[0]))).toBe(0);
    await queue.obliterate();
    await queue.close();
  }, 120_000);

  it('obliterates a queue and drains another', async () => {
    const doomed = openQueue(uniqueQueueName('obliterate'));
    const drained = openQueue(uniqueQueueName('drain'));
    await addJobs(doomed, JOBS / 2);
    await moveWaitTo(doomed.keys, 'failed');
    await addJobs(doomed, JOBS / 2);
    await addJobs(drained, JOBS / 2);
    await whileHeartbeatHolds(async () => {
      await doomed.obliterate();
      await drained.drain();
    });
    expect(await client.exists(doomed.keys.failed, doomed.keys.wait, doomed.keys.meta, drained.keys.wait)).toBe(0);
    await drained.obliterate();
    await Promise.all([doomed.close(), drained.close()]);
  }, 120_000);
});
