import { afterAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { Queue, RedisFullError, Worker, type Job } from '../lib/index.js';
import { startRedis, type RedisProcess } from './support/redis-process.js';
import { eventually, masters, newClient, queueKeys, singleNodeIt, sleep, testConnection, uniqueQueueName } from './support/redis.js';

/** Hostile conditions on real Redis: corrupt jobs, a full Redis, an evicting Redis, ACL users, a lone sweeper. */
describe('hostile conditions', () => {
  const client = newClient();
  const closers: Array<() => Promise<unknown>> = [];
  afterAll(async () => {
    for (const close of closers.reverse()) await close().catch(() => undefined);
    await client.quit();
  });

  /** A private redis-server for one test, stopped at the end. */
  async function ownRedis(args: string[] = []): Promise<RedisProcess> {
    const redis = await startRedis({ args });
    closers.push(() => redis.stop());
    return redis;
  }

  function track<T extends { close(): Promise<unknown> }>(thing: T): T {
    closers.push(() => thing.close());
    return thing;
  }

  /** An admin connection to a private server, dropped at the end. */
  function adminOf(redis: RedisProcess): Redis {
    const admin = new Redis(redis.url);
    closers.push(async () => admin.disconnect());
    return admin;
  }

  it('fails a corrupt or half-missing job with a clear reason and keeps working', async () => {
    const name = uniqueQueueName('corrupt');
    const queue = track(new Queue(name, { connection: testConnection() }));
    const broken = await queue.add('broken', { n: 1 });
    const nameless = await queue.add('nameless', { n: 2 });
    const healthy = await queue.add('healthy', { n: 3 });
    await client.hset(queue.keys.job(broken.id), 'data', '{"n": 1, oops');
    await client.hdel(queue.keys.job(nameless.id), 'name', 'opts');

    const failures: Array<[string, string]> = [];
    const errors: Error[] = [];
    const worker = track(new Worker(name, async (job: Job) => (job.data as { n: number }).n * 10, { connection: testConnection() }));
    worker.on('failed', (job, error) => failures.push([job.id, error.message]));
    worker.on('error', (error) => errors.push(error));

    await eventually(async () => (await queue.getJobCounts('completed', 'failed')).completed === 1 && failures.length === 2, 15_000, 'all three jobs finished');
    expect(Object.fromEntries(failures)).toEqual({
      [broken.id]: `job ${broken.id} is corrupt: field "data" is not valid JSON`,
      [nameless.id]: `job ${nameless.id} is corrupt: it has no "name" field`,
    });
    expect((await client.hget(queue.keys.job(broken.id), 'failedReason'))).toMatch(/is corrupt: field "data"/);
    expect((await queue.getJob(healthy.id))?.returnvalue).toBe(30);
    expect(worker.status).toBe('running');
    expect(errors).toEqual([]);
  });

  // Single-node: fills a redis-server of its own (maxmemory).
  singleNodeIt('rejects add() with a RedisFullError on a full Redis, writes nothing, and loses nothing stored', async () => {
    const redis = await ownRedis(['--maxmemory', '3mb', '--maxmemory-policy', 'noeviction']);
    const admin = adminOf(redis);
    const name = uniqueQueueName('full');
    const queue = track(new Queue(name, { connection: redis.url }));
    const stored: string[] = [];
    const blob = 'x'.repeat(20_000);
    let refusal: unknown;
    for (let n = 0; n < 1000 && refusal === undefined; n++) {
      const before = await queueKeys(admin, name);
      const counter = await admin.get(queue.keys.id);
      try {
        stored.push((await queue.add('fill', { n, blob })).id);
      } catch (error) {
        refusal = error;
        // The refused add wrote nothing at all: not a key, not even the id counter.
        expect(await queueKeys(admin, name)).toEqual(before);
        expect(await admin.get(queue.keys.id)).toBe(counter);
      }
    }
    expect(refusal).toBeInstanceOf(RedisFullError);
    expect((refusal as Error).message).toMatch(/out of memory.*wrote nothing.*raise maxmemory/);
    await expect(queue.addBulk([{ name: 'more', data: { blob } }])).rejects.toBeInstanceOf(RedisFullError);
    expect(stored.length).toBeGreaterThan(10);

    // Every job stored before is intact, and runs once memory is available again.
    await admin.config('SET', 'maxmemory', '0');
    const done = new Set<string>();
    const worker = track(new Worker(name, async (job: Job) => (job.data as { n: number }).n, { connection: redis.url, concurrency: 8 }));
    worker.on('completed', (job) => done.add(job.id));
    await eventually(() => done.size === stored.length, 30_000, 'every stored job completed');
    expect((await queue.getJob(stored[3]))?.returnvalue).toBe(3);
  });

  it('warns at start when maxmemory-policy would evict jobs, and not when it is noeviction', async () => {
    const redis = await ownRedis(['--maxmemory', '100mb', '--maxmemory-policy', 'allkeys-lru']);
    const evicting = track(new Worker(uniqueQueueName('evict'), async () => 1, { connection: redis.url, autorun: false }));
    const warnings: string[] = [];
    evicting.on('warning', (message) => warnings.push(message));
    void evicting.run();
    await eventually(() => warnings.length === 1, 10_000, 'the eviction warning');
    expect(warnings[0]).toMatch(/maxmemory-policy is "allkeys-lru".*jobs would be lost.*noeviction/);

    const safe = track(new Worker(uniqueQueueName('safe'), async () => 1, { connection: testConnection(), autorun: false }));
    const none: string[] = [];
    safe.on('warning', (message) => none.push(message));
    void safe.run();
    await safe.waitUntilReady();
    await sleep(300);
    expect(none).toEqual([]);
  });

  it('warns when any server of the test Redis would evict: on a Cluster, each master in turn', async () => {
    // CONFIG GET on a Cluster goes to one node; an evicting master elsewhere went unnoticed.
    for (const server of await masters(client)) {
      await server.config('SET', 'maxmemory-policy', 'allkeys-lru');
      try {
        const worker = track(new Worker(uniqueQueueName('evict-one'), async () => 1, { connection: testConnection(), autorun: false }));
        const warnings: string[] = [];
        worker.on('warning', (message) => warnings.push(message));
        void worker.run();
        await eventually(() => warnings.length === 1, 5_000, `the eviction warning (policy set on ${server.options.port})`);
        expect(warnings[0]).toMatch(/maxmemory-policy is "allkeys-lru"/);
        await worker.close();
      } finally {
        await server.config('SET', 'maxmemory-policy', 'noeviction');
      }
    }
  });

  // Single-node: sets requirepass and an ACL user on a redis-server of its own.
  singleNodeIt('works end to end as an ACL user limited to the queue keys, with AUTH on', async () => {
    const redis = await ownRedis();
    const admin = adminOf(redis);
    await admin.config('SET', 'requirepass', 'admin-secret');
    await admin.auth('admin-secret');
    const name = uniqueQueueName('acl');
    // The rule docs/reliability.md documents: the queue's keys, and the command categories EchoMQ uses.
    await admin.acl('SETUSER', 'orders-app', 'reset', 'on', '>app-secret', `~emq:{${name}}:*`, 'resetchannels',
      '-@all', '+@read', '+@write', '+@scripting', '+@connection', '+@blocking', '-@dangerous', '+info');
    const connection = { port: redis.port, username: 'orders-app', password: 'app-secret' };

    const queue = track(new Queue(name, { connection }));
    const errors: Error[] = [];
    const warnings: string[] = [];
    const worker = track(new Worker(name, async (job: Job) => (job.data as { n: number }).n * 2, { connection }));
    worker.on('error', (error) => errors.push(error));
    worker.on('warning', (message) => warnings.push(message));
    const result = new Promise((resolve) => worker.on('completed', (_job, value) => resolve(value)));
    await queue.add('double', { n: 21 });
    expect(await result).toBe(42);
    expect(errors).toEqual([]);
    expect(warnings).toEqual([]); // no CONFIG permission: the policy check is skipped, not an error

    const other = track(new Queue(uniqueQueueName('other'), { connection }));
    await expect(other.add('x', {})).rejects.toThrow(/NOPERM/);
    const unauthenticated = track(new Queue(name, { connection: { port: redis.port, retryStrategy: () => null } }));
    unauthenticated.client.on('error', () => undefined);
    await expect(unauthenticated.add('x', {})).rejects.toThrow(/NOAUTH|Authentication required/);
  });

  it('a lone worker sweeps once per stalledInterval, not every second interval', async () => {
    const stalledInterval = 2000;
    const name = uniqueQueueName('sweep');
    const worker = track(new Worker(name, async () => 1, { connection: testConnection(), stalledInterval }));
    await worker.waitUntilReady();
    // The stalled-check guard holds the time of the sweep that set it: each new value is one sweep.
    const guardKey = `emq:{${name}}:stalled-check`;
    const sweeps: number[] = [];
    const until = Date.now() + stalledInterval * 4.5;
    while (Date.now() < until) {
      const value = await client.get(guardKey);
      if (value !== null && Number(value) !== sweeps.at(-1)) sweeps.push(Number(value));
      await sleep(25);
    }
    const gaps = sweeps.slice(1).map((at, i) => at - sweeps[i]);
    expect(gaps.length).toBeGreaterThanOrEqual(3);
    for (const gap of gaps) expect(gap).toBeLessThan(stalledInterval * 1.5);
  });
});
