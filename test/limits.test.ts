import { afterAll, afterEach, describe, expect, it } from '@jest/globals';
import { EchoMQOptionError, Keys, Queue, RateLimitError, Worker, type Job } from '../lib/index.js';
import { Scripts } from '../lib/internal.js';
import { partitionOf } from '../lib/protocol/partitions.js';
import { LIMIT_FIELDS } from '../lib/protocol/queue-limits.js';
import { eventually, newClient, sleep, testConnection, uniqueQueueName } from './support/redis.js';
import { Harness } from './support/workers.js';

// Queue-wide limits (docs/limits.md): the API, the bound and the rate as workers keep them, and the
// manual rate limit. The multi-process runs are in limits-processes.test.ts.
const client = newClient();
let h: Harness | undefined;
const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (closers.length) await closers.pop()!();
  await h?.close();
  h = undefined;
});
afterAll(() => client.quit());

/** A processor that holds each job until the test opens the gate. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, processor: async () => { await opened; return 'ok'; } };
}

/** Samples LLEN active every few ms until stopped; answers the highest value seen. */
function sampleActive(keys: Keys): { stop(): Promise<number> } {
  let running = true;
  let max = 0;
  const loop = (async () => {
    while (running) {
      max = Math.max(max, await client.llen(keys.active));
      await sleep(2);
    }
  })();
  return { stop: async () => { running = false; await loop; return max; } };
}

/** How long `promise` took to settle, or Infinity if it did not within `limitMs`. */
async function timed(promise: Promise<unknown>, limitMs: number): Promise<number> {
  const started = Date.now();
  let timer: NodeJS.Timeout | undefined;
  const settled = await Promise.race([
    promise.then(() => true, () => true),
    new Promise<false>((resolve) => (timer = setTimeout(resolve, limitMs, false))),
  ]);
  clearTimeout(timer);
  return settled ? Date.now() - started : Infinity;
}

describe('the queue-wide limits: Queue API', () => {
  it('set, get and remove, as fields of the queue\'s meta hash', async () => {
    h = new Harness();
    const { queue } = h;
    expect(await queue.getGlobalConcurrency()).toBeNull();
    expect(await queue.getGlobalRateLimit()).toBeNull();
    await queue.setGlobalConcurrency(3);
    await queue.setGlobalRateLimit(100, 1000);
    expect(await queue.getGlobalConcurrency()).toBe(3);
    expect(await queue.getGlobalRateLimit()).toEqual({ max: 100, duration: 1000 });
    expect(await client.hgetall(queue.keys.meta)).toEqual({ concurrency: '3', rateLimitMax: '100', rateLimitDuration: '1000' });
    await queue.removeGlobalConcurrency();
    await queue.removeGlobalRateLimit();
    expect(await queue.getGlobalConcurrency()).toBeNull();
    expect(await queue.getGlobalRateLimit()).toBeNull();
    expect(await client.exists(queue.keys.meta)).toBe(0);
  });

  it('refuses bad arguments with EchoMQOptionError naming the field, and writes nothing', async () => {
    h = new Harness();
    const { queue } = h;
    const refusals: Array<[() => Promise<unknown>, string]> = [
      [() => queue.setGlobalConcurrency(0), 'concurrency'],
      [() => queue.setGlobalConcurrency(1.5), 'concurrency'],
      [() => queue.setGlobalConcurrency('3' as unknown as number), 'concurrency'],
      [() => queue.setGlobalRateLimit(0, 1000), 'max'],
      [() => queue.setGlobalRateLimit(10, -1), 'duration'],
      [() => queue.setGlobalRateLimit(10, Infinity), 'duration'],
    ];
    for (const [call, field] of refusals) {
      const error = await call().then(() => undefined, (e: unknown) => e);
      expect(error).toBeInstanceOf(EchoMQOptionError);
      expect((error as EchoMQOptionError).field).toBe(field);
    }
    const worker = h.worker(async () => 'ok', { autorun: false });
    for (const bad of [0, -5, 2.5, Number.NaN]) {
      await expect(worker.rateLimit(bad)).rejects.toMatchObject({ name: 'EchoMQOptionError', field: 'expireTimeMs' });
    }
    expect(await client.exists(queue.keys.meta, queue.keys.limiter)).toBe(0);
    expect(() => new Worker(h!.name, async () => 'ok', { connection: testConnection(), name: '', autorun: false }))
      .toThrow(expect.objectContaining({ field: 'name' }) as unknown as Error);
  });

  it('a partitioned queue: refuses a queue-wide concurrency (no script sees every partition), keeps a rate limit in partition 0', async () => {
    const name = uniqueQueueName('plimits');
    const queue = new Queue(name, { connection: testConnection(), partitions: 3 });
    closers.push(() => queue.close());
    const error = await queue.setGlobalConcurrency(2).then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(EchoMQOptionError);
    expect((error as EchoMQOptionError).field).toBe('concurrency');
    expect((error as Error).message).toMatch(/partitionConcurrency/);
    await queue.setGlobalRateLimit(5, 1000);
    expect(await queue.getGlobalRateLimit()).toEqual({ max: 5, duration: 1000 });
    expect(await client.hgetall(queue.partitionKeys[0].meta)).toEqual({ rateLimitMax: '5', rateLimitDuration: '1000' });
    expect(await client.exists(queue.partitionKeys[1].meta)).toBe(0);
    await queue.removeGlobalRateLimit();
  });
});

describe('setGlobalConcurrency: at most n jobs active across every worker', () => {
  it('holds across workers whose own concurrency is higher, and every job is done', async () => {
    h = new Harness();
    await h.queue.setGlobalConcurrency(2);
    const workers = [0, 1, 2].map(() => h!.worker(async () => { await sleep(5 + Math.random() * 15); return 'ok'; }, { concurrency: 5 }));
    const sampler = sampleActive(h.queue.keys);
    await h.queue.addBulk(Array.from({ length: 120 }, (_, i) => ({ name: 'n', data: { i } })));
    await eventually(async () => (await h!.queue.getJobCounts('completed')).completed === 120, 30_000, 'all 120 completed');
    const max = await sampler.stop();
    expect(max).toBe(2); // reached, never passed
    expect(workers.length).toBe(3);
    expect(h.errors).toEqual([]);
  });

  it('a change reaches the workers within one tick: lowered, fetch-next keeps the new bound; lifted, blocked workers wake at once', async () => {
    h = new Harness();
    await h.queue.setGlobalConcurrency(4);
    // drainDelay 30 s: a worker blocked on the full queue could only wake by the marker or a tick.
    const opts = { concurrency: 4, lockDuration: 1000, drainDelay: 30 };
    for (let i = 0; i < 3; i++) h.worker(async () => { await sleep(20); return 'ok'; }, opts);
    await h.queue.addBulk(Array.from({ length: 400 }, (_, i) => ({ name: 'n', data: { i } })));
    await eventually(async () => (await client.llen(h!.queue.keys.active)) === 4, 5000, 'four active');

    await h.queue.setGlobalConcurrency(1);
    await sleep(2 * 500 + 200); // two ticks (lockRenewTime 500) and the jobs then running
    const sampler = sampleActive(h.queue.keys);
    await sleep(800);
    expect(await sampler.stop()).toBe(1);

    await h.queue.removeGlobalConcurrency();
    await eventually(async () => (await client.llen(h!.queue.keys.active)) > 1, 2000, 'more than one active once the bound is lifted');
    await eventually(async () => (await h!.queue.getJobCounts('completed')).completed === 400, 30_000, 'all completed');
  });

  it('a job that ends with no job handed over wakes a worker blocked on the full queue (no drainDelay wait)', async () => {
    h = new Harness();
    await h.queue.setGlobalConcurrency(1);
    const { open, processor } = gate();
    const a = h.worker(processor, { drainDelay: 30 });
    const first = await h.queue.add('first', {});
    await eventually(async () => (await h!.queue.getJob(first.id))?.attemptsStarted === 1, 5000, 'A runs the first job');
    const ranByB: string[] = [];
    h.worker(async (job) => { ranByB.push(job.id); return 'ok'; }, { drainDelay: 30 });
    const second = await h.queue.add('second', {});
    await sleep(300); // B woke on the add's marker, found the queue full, blocks for up to 30 s
    expect(ranByB).toEqual([]);
    // A closes: its finish takes no next job, so active has room and a job waits: the marker.
    const closed = a.close();
    open();
    await closed;
    expect(await timed(eventually(() => ranByB.length === 1, 10_000, 'B takes the second job'), 10_000)).toBeLessThan(10_000);
    expect(ranByB).toEqual([second.id]);
  });
});

describe('setGlobalRateLimit', () => {
  it('wins over a worker\'s limiter while set; lifted, it gives way to the limiter within a tick', async () => {
    h = new Harness();
    await h.queue.setGlobalRateLimit(2, 5000);
    let completed = 0;
    const worker = h.worker(async () => 'ok', { limiter: { max: 1000, duration: 1000 }, lockDuration: 1000, concurrency: 3 });
    worker.on('completed', () => completed++);
    await h.queue.addBulk(Array.from({ length: 6 }, (_, i) => ({ name: 'n', data: { i } })));
    await eventually(() => completed === 2, 5000, 'two completed');
    await sleep(1200); // the worker waits out the 5 s window
    expect(completed).toBe(2);
    await h.queue.removeGlobalRateLimit();
    await eventually(() => completed === 6, 2500, 'the rest within about a tick, before the window ends');
  });

  it('on a partitioned queue it applies per partition, as a worker\'s limiter does', async () => {
    const name = uniqueQueueName('prate');
    const queue = new Queue(name, { connection: testConnection(), partitions: 2 });
    closers.push(() => queue.close());
    await queue.setGlobalRateLimit(1, 5000);
    const worker = new Worker(name, async () => 'ok', { connection: testConnection(), partitions: 2, concurrency: 4 });
    closers.push(() => worker.close());
    const keys = ['k0', 'k1', 'k2', 'k3', 'k4', 'k5'].filter((key, i, all) => all.findIndex((k) => partitionOf(k, 2) === partitionOf(key, 2)) === i);
    expect(keys.map((key) => partitionOf(key, 2)).sort()).toEqual([0, 1]);
    await queue.addBulk(keys.flatMap((partitionKey) => [0, 1].map((i) => ({ name: 'n', data: { i }, opts: { partitionKey } }))));
    await eventually(async () => (await queue.getJobCounts('completed')).completed === 2, 5000, 'one per partition');
    await sleep(1000);
    expect(await queue.getJobCounts('completed', 'wait')).toEqual({ completed: 2, wait: 2 });
  });

  it('a rate-limited worker sleeps: no pickup is sent until the window ends, and close() cuts the sleep short', async () => {
    h = new Harness();
    await h.queue.setGlobalRateLimit(1, 20_000);
    const worker = h.worker(async () => 'ok', { concurrency: 2, lockDuration: 1000 });
    let completed = 0;
    worker.on('completed', () => completed++);
    await h.queue.addBulk(Array.from({ length: 3 }, (_, i) => ({ name: 'n', data: { i } })));
    await eventually(() => completed === 1, 5000, 'one completed');
    await sleep(200);
    const pickups = countPickups();
    try {
      await sleep(1500); // three ticks: the limits are read again, the sleep goes on
      expect(pickups.count).toBeLessThanOrEqual(1);
    } finally {
      pickups.restore();
    }
    expect(completed).toBe(1);
    expect(await timed(worker.close(), 10_000)).toBeLessThan(5000);
  });
});

describe('worker.rateLimit(ms) and RateLimitError', () => {
  it('the job goes back to wait without using an attempt; no worker takes a job until the limit lifts', async () => {
    h = new Harness();
    const starts: Array<{ at: number; name: string }> = [];
    let limitedAt = 0;
    const workers: Worker[] = [];
    const processor = (self: () => Worker) => async (job: Job) => {
      starts.push({ at: Date.now(), name: job.name });
      if (job.name === 'api' && limitedAt === 0) {
        limitedAt = Date.now();
        await self().rateLimit(1500);
        await h!.queue.addBulk([1, 2, 3].map((i) => ({ name: 'other', data: { i } })));
        throw new RateLimitError();
      }
      return 'ok';
    };
    // Workers with a limiter pass a max: the limiter key stops them at their next pickup.
    const opts = { limiter: { max: 1000, duration: 1000 }, concurrency: 2 };
    for (let i = 0; i < 2; i++) {
      const worker: Worker = h.worker(processor(() => worker), opts);
      workers.push(worker);
    }
    const failed: string[] = [];
    for (const worker of workers) worker.on('failed', (job) => failed.push(job.id));
    const api = await h.queue.add('api', {}, { attempts: 1 });
    await eventually(async () => (await h!.queue.getJobCounts('completed')).completed === 4, 10_000, 'all four completed');
    const after = starts.filter((s) => s.at > limitedAt);
    expect(after).toHaveLength(4); // the api job again, and the three others
    for (const start of after) expect(start.at).toBeGreaterThanOrEqual(limitedAt + 1500);
    const done = await h.queue.getJob(api.id);
    expect(done?.finishedOn).toBeDefined();
    expect(await done?.getState()).toBe('completed');
    expect(done?.attemptsMade).toBe(1); // one attempt made: the rate-limited run did not count
    expect(done?.attemptsStarted).toBe(2);
    expect(failed).toEqual([]);
  });

  it('workers with no rate limit of their own stop at their next heartbeat tick', async () => {
    h = new Harness();
    const starts: number[] = [];
    let limitedAt = 0;
    const processor = (self: () => Worker) => async (job: Job) => {
      if (job.name === 'api' && limitedAt === 0) {
        limitedAt = Date.now();
        await self().rateLimit(3000);
        await h!.queue.addBulk(Array.from({ length: 40 }, (_, i) => ({ name: 'other', data: { i } })));
        throw new RateLimitError();
      }
      starts.push(Date.now());
      await sleep(50);
      return 'ok';
    };
    // Both run before the limit is set, neither with a limiter: the one that did not set it learns
    // of it from the meta field at its next tick (lockRenewTime 500), and takes jobs until then.
    for (let i = 0; i < 2; i++) {
      const worker: Worker = h.worker(processor(() => worker), { lockDuration: 1000, concurrency: 2 });
      await worker.waitUntilReady();
    }
    await sleep(100);
    await h.queue.add('api', {});
    await eventually(async () => (await h!.queue.getJobCounts('completed')).completed === 41, 15_000, 'all completed');
    expect(starts.filter((at) => at > limitedAt + 1000 && at < limitedAt + 2995)).toEqual([]);
    expect(starts.filter((at) => at >= limitedAt + 2995).length).toBeGreaterThan(0);
  });

  it('close() during a manual rate limit returns at once', async () => {
    h = new Harness();
    const worker = h.worker(async () => 'ok');
    await worker.waitUntilReady();
    await worker.rateLimit(60_000);
    expect(Number(await client.pttl(h.queue.keys.limiter))).toBeGreaterThan(50_000);
    expect(Number(await client.hget(h.queue.keys.meta, LIMIT_FIELDS.rateLimitedUntil))).toBeGreaterThan(Date.now() + 50_000);
    await h.queue.add('waits', {});
    await sleep(300);
    expect(await h.queue.getJobCounts('wait')).toEqual({ wait: 1 });
    expect(await timed(worker.close(), 10_000)).toBeLessThan(5000);
  });
});

/** Counts moveToActive calls (every pickup of every worker of this process) until restored. */
function countPickups(): { readonly count: number; restore(): void } {
  const proto = Scripts.prototype as unknown as { moveToActive: (...args: unknown[]) => Promise<unknown> };
  const original = proto.moveToActive;
  let count = 0;
  proto.moveToActive = function (this: unknown, ...args: unknown[]) {
    count++;
    return original.apply(this, args);
  };
  return { get count() { return count; }, restore: () => { proto.moveToActive = original; } };
}
