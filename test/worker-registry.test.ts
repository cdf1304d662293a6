import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { hostname } from 'node:os';
import { LockManager, Queue, Worker } from '../lib/index.js';
import { SCRIPTS } from '../lib/internal.js';
import { startRedis, type RedisProcess } from './support/redis-process.js';
import { eventually, newClient, singleNodeDescribe, sleep, testConnection, uniqueQueueName } from './support/redis.js';
import { monitorCommands } from './support/monitor.js';
import { Harness } from './support/workers.js';

// queue.getWorkers() and what a worker's heartbeat carries (docs/limits.md): the registry entry and
// the read of the queue's limits ride in the tick's pipeline; nothing is sent per job.
const client = newClient();
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});
afterAll(() => client.quit());

describe('queue.getWorkers()', () => {
  it('lists every live worker with its details; a closed one is gone at once', async () => {
    h = new Harness();
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const before = Date.now();
    const alpha = h.worker(() => held, { name: 'alpha', concurrency: 3, lockDuration: 1000 });
    await h.queue.add('held', {});
    await eventually(() => alpha.runningCount === 1, 5000, 'alpha runs the job');
    const beta = h.worker(async () => 'ok', { lockDuration: 1000 });
    await eventually(async () => (await h!.queue.getWorkers()).length === 2, 5000, 'both registered');
    // The entry says what the worker ran at its last heartbeat (lockRenewTime 500).
    await eventually(async () => (await h!.queue.getWorkers()).find((w) => w.id === alpha.id)?.running === 1, 3000, 'alpha running one job');
    const workers = await h.queue.getWorkers();
    expect(workers.map((w) => w.id).sort()).toEqual([alpha.id, beta.id].sort());
    const a = workers.find((w) => w.id === alpha.id)!;
    expect(a).toEqual({
      id: alpha.id, name: 'alpha', host: hostname(), pid: process.pid, concurrency: 3, running: 1,
      startedAt: expect.any(Number), lastSeen: expect.any(Number),
    });
    expect(a.startedAt).toBeGreaterThanOrEqual(before);
    expect(a.lastSeen).toBeGreaterThan(a.startedAt);
    const b = workers.find((w) => w.id === beta.id)!;
    expect(b.name).toBeUndefined();
    expect(b).toMatchObject({ concurrency: 1, running: 0 });

    await beta.close();
    expect((await h.queue.getWorkers()).map((w) => w.id)).toEqual([alpha.id]);
    expect(await client.exists(h.queue.keys.worker(beta.id))).toBe(0);
    release();
    await alpha.close();
    expect(await h.queue.getWorkers()).toEqual([]);
    expect(await client.zcard(h.queue.keys.workers)).toBe(0);
  });

  it('an entry its worker stopped writing expires, and getWorkers drops it from the index', async () => {
    h = new Harness();
    const lockManager = new LockManager();
    const worker = h.worker(async () => 'ok', { lockDuration: 600, lockManager });
    await eventually(async () => (await h!.queue.getWorkers()).length === 1, 5000, 'registered');
    // Stop its heartbeat without a close (as a killed process would): the entry is not rewritten.
    await lockManager.close();
    const ttl = 2 * 300 + 1000;
    await sleep(ttl + 300);
    expect(await h.queue.getWorkers()).toEqual([]);
    expect(await client.zscore(h.queue.keys.workers, worker.id)).toBeNull();
  });

  it('a member whose entry is gone before its score passes is dropped by the getWorkers that found it so', async () => {
    // What a dead worker looks like in the millisecond between its entry's expiry (Redis's clock)
    // and its member's score (its own): listed by nobody, and then gone from the index too.
    const queue = new Queue(uniqueQueueName('registry-gone'), { connection: testConnection() });
    await client.zadd(queue.keys.workers, Date.now() + 60_000, 'gone-worker');
    expect(await queue.getWorkers()).toEqual([]);
    expect(await client.zcard(queue.keys.workers)).toBe(0);
    await queue.close();
  });

  it('a partitioned queue keeps its registry in partition 0', async () => {
    const name = uniqueQueueName('preg');
    const queue = new Queue(name, { connection: testConnection(), partitions: 3 });
    const worker = new Worker(name, async () => 'ok', { connection: testConnection(), partitions: 3 });
    try {
      await eventually(async () => (await queue.getWorkers()).length === 1, 5000, 'registered');
      expect(await client.zscore(queue.partitionKeys[0].workers, worker.id)).not.toBeNull();
      expect(await client.exists(queue.partitionKeys[1].workers)).toBe(0);
    } finally {
      await worker.close();
      await queue.close();
    }
    expect(await client.exists(queue.partitionKeys[0].workers)).toBe(0);
  });
});

// MONITOR on a redis-server of this file's own: every command the worker sends, and nothing else's.
singleNodeDescribe('what a worker sends (MONITOR)', () => {
  let redis: RedisProcess;
  let admin: Redis;
  beforeAll(async () => {
    redis = await startRedis();
    admin = new Redis(redis.url);
    // Loaded before any worker runs: a first call's NOSCRIPT (sent again as EVAL) would split a tick.
    for (const script of Object.values(SCRIPTS)) await admin.script('LOAD', script.lua);
  });
  afterAll(async () => {
    admin.disconnect();
    await redis.stop();
  });

  /** The commands (lower-cased name and args) every client sends while `during` runs, with the client's address. */
  async function monitored(during: (lines: Array<{ source: string; args: string[] }>) => Promise<void>) {
    const lines: Array<{ source: string; args: string[] }> = [];
    const stopMonitor = await monitorCommands(admin.options.host ?? '127.0.0.1', admin.options.port ?? 6379, (args, source) => {
      // Commands a script ran are listed too, from "lua": only what clients sent counts here.
      if (source !== 'lua') lines.push({ source, args: [args[0].toLowerCase(), ...args.slice(1)] });
    });
    try {
      await during(lines);
    } finally {
      stopMonitor();
    }
  }

  /** Runs 200 jobs at concurrency 1; the commands seen while jobs 50 to 150 completed. */
  async function steadyState(setUp: (queue: Queue) => Promise<void>): Promise<Array<{ source: string; args: string[] }>> {
    const name = uniqueQueueName('steady');
    const queue = new Queue(name, { connection: redis.url });
    await setUp(queue);
    await queue.addBulk(Array.from({ length: 200 }, (_, i) => ({ name: 'n', data: { i } })));
    let window: Array<{ source: string; args: string[] }> = [];
    await monitored(async (lines) => {
      let completed = 0;
      const worker = new Worker(name, async () => 'ok', { connection: redis.url });
      try {
        await new Promise<void>((resolve) => worker.on('completed', () => {
          completed++;
          if (completed === 50) lines.length = 0;
          if (completed === 150) {
            window = [...lines];
            resolve();
          }
        }));
      } finally {
        await worker.close();
      }
    });
    await queue.close();
    return window;
  }

  it('a queue with no limit set: one moveToFinished-14 call per job, and nothing else', async () => {
    const window = await steadyState(async () => undefined);
    expect(new Set(window.map((line) => `${line.args[0]} ${line.args[1]}`))).toEqual(new Set([`evalsha ${SCRIPTS.moveToFinished.sha}`]));
    expect(Math.abs(window.length - 100)).toBeLessThanOrEqual(2);
  });

  it('under a global concurrency: one finishJobsBounded-13 call per job, and nothing else', async () => {
    const window = await steadyState((queue) => queue.setGlobalConcurrency(5));
    expect(new Set(window.map((line) => `${line.args[0]} ${line.args[1]}`))).toEqual(new Set([`evalsha ${SCRIPTS.finishJobsBounded.sha}`]));
    expect(Math.abs(window.length - 100)).toBeLessThanOrEqual(2);
  });

  it('each tick is one pipeline on the renewal connection: the renewals, then the registry write and the limits read', async () => {
    const name = uniqueQueueName('tick');
    const queue = new Queue(name, { connection: redis.url });
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const keys = queue.keys;
    await monitored(async (lines) => {
      const worker = new Worker(name, () => held, { connection: redis.url, lockDuration: 600, stalledInterval: 600_000 });
      try {
        await worker.waitUntilReady();
        await sleep(700); // idle ticks (lockRenewTime 300)
        await queue.add('held', {});
        await sleep(1000); // ticks with a job held
      } finally {
        release();
        await worker.close();
      }
      const registryWrites = lines.filter((line) => line.args[0] === 'zadd' && line.args[1] === keys.workers);
      const tickSource = registryWrites[registryWrites.length - 1].source;
      const fromTicks = lines.filter((line) => line.source === tickSource).map((line) => (line.args[0] === 'evalsha' ? `evalsha ${line.args[1]}` : line.args[0]));
      // The connection's own handshake (HELLO, CLIENT SETNAME, INFO) comes before its first tick.
      const firstTick = Math.min(...['set', `evalsha ${SCRIPTS.extendLocks.sha}`].map((c) => fromTicks.indexOf(c)).filter((i) => i >= 0));
      const ticks = fromTicks.slice(firstTick);
      const extendLocks = `evalsha ${SCRIPTS.extendLocks.sha}`;
      // Idle: the three commands (the entry before its index member); holding a job: the renewal
      // first, the three after it.
      const idle = ['set', 'zadd', 'hmget'];
      const busy = [extendLocks, ...idle];
      const groups: string[][] = [];
      for (let i = 0; i < ticks.length;) {
        const group = ticks[i] === extendLocks ? busy : idle;
        expect(ticks.slice(i, i + group.length)).toEqual(group);
        groups.push(group);
        i += group.length;
      }
      expect(groups.filter((g) => g === idle).length).toBeGreaterThanOrEqual(2);
      expect(groups.filter((g) => g === busy).length).toBeGreaterThanOrEqual(2);
      // The start's registration went on the worker's own connection, not this one.
      expect(lines.filter((line) => line.args[0] === 'zremrangebyscore' && line.source !== tickSource)).toHaveLength(1);
    });
    await queue.close();
  });
});
