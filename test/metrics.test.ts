import { describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { EchoMQOptionError, Queue, Worker } from '../lib/index.js';
import { SCRIPTS } from '../lib/internal.js';
import { recordMetrics } from '../lib/protocol/metrics.js';
import { eventually, newClient, queueKeys, redisUrl, singleNodeIt, testConnection, uniqueQueueName } from './support/redis.js';
import { monitorCommands } from './support/monitor.js';

const MINUTE = 60_000;
/** A minute start far from now, so the script's arithmetic is checked on chosen minutes. */
const T0 = 1_700_000_040_000;

describe('metrics: recordMetrics-2', () => {
  it('adds to the open minute, closes it with one 0 per silent minute, and places a late count in its minute', async () => {
    const queue = new Queue(uniqueQueueName('metrics'), { connection: testConnection() });
    const keys = queue.keys;
    try {
      expect(await queue.getMetrics('completed')).toEqual({ meta: { count: 0, prevTS: 0, prevCount: 0 }, data: [], count: 0 });
      expect(await recordMetrics(queue.client, keys, 'completed', 3, T0, 10)).toBe(3);
      expect(await recordMetrics(queue.client, keys, 'completed', 2, T0, 10)).toBe(5); // same minute
      // Three minutes on: T0 closes with 5, T0+1 and T0+2 had nothing.
      expect(await recordMetrics(queue.client, keys, 'completed', 4, T0 + 3 * MINUTE, 10)).toBe(9);
      expect(await queue.getMetrics('completed')).toEqual({ meta: { count: 9, prevTS: T0 + 3 * MINUTE, prevCount: 5 }, data: [0, 0, 5], count: 3 });
      // Another worker's flush of T0+1 arrives late: it goes to that minute, not to the open one.
      await recordMetrics(queue.client, keys, 'completed', 7, T0 + MINUTE, 10);
      expect(await queue.getMetrics('completed')).toEqual({ meta: { count: 16, prevTS: T0 + 3 * MINUTE, prevCount: 12 }, data: [0, 7, 5], count: 3 });
      // start/end as LRANGE; the other type is untouched.
      expect((await queue.getMetrics('completed', 1, 1)).data).toEqual([7]);
      expect((await queue.getMetrics('failed')).meta.count).toBe(0);
    } finally {
      await queue.obliterate({ force: true });
      await queue.close();
    }
  });

  it('after an idle stretch: the closed minute, then one 0 per silent minute, each at its minute\'s index', async () => {
    const queue = new Queue(uniqueQueueName('metrics'), { connection: testConnection() });
    try {
      await recordMetrics(queue.client, queue.keys, 'completed', 3, T0, 5);
      await recordMetrics(queue.client, queue.keys, 'completed', 1, T0 + 4 * MINUTE, 5);
      expect(await queue.getMetrics('completed')).toEqual({ meta: { count: 4, prevTS: T0 + 4 * MINUTE, prevCount: 3 }, data: [0, 0, 0, 3], count: 4 });
      // A gap of exactly maxDataPoints: the minute closing is the oldest kept (index 4 = 5 minutes back).
      await recordMetrics(queue.client, queue.keys, 'completed', 2, T0 + 9 * MINUTE, 5);
      expect((await queue.getMetrics('completed')).data).toEqual([0, 0, 0, 0, 1]);
      // One minute more than the list holds: the minute closing is out of range, every entry a silent minute.
      await recordMetrics(queue.client, queue.keys, 'completed', 1, T0 + 15 * MINUTE, 5);
      expect(await queue.getMetrics('completed')).toEqual({ meta: { count: 7, prevTS: T0 + 15 * MINUTE, prevCount: 6 }, data: [0, 0, 0, 0, 0], count: 5 });
      // A time inside a minute is taken as that minute.
      await recordMetrics(queue.client, queue.keys, 'completed', 1, T0 + 16 * MINUTE + 59_999, 5);
      expect(await queue.getMetrics('completed')).toEqual({ meta: { count: 8, prevTS: T0 + 16 * MINUTE, prevCount: 7 }, data: [1, 0, 0, 0, 0], count: 5 });
    } finally {
      await queue.obliterate({ force: true });
      await queue.close();
    }
  });

  it('a late count for a minute older than the list: in count, not in any entry, not in the open minute', async () => {
    const queue = new Queue(uniqueQueueName('metrics'), { connection: testConnection() });
    try {
      // Another worker opened T0 first; this one's flush of T0 - 1 minute arrives after it.
      await recordMetrics(queue.client, queue.keys, 'failed', 2, T0, 10);
      await recordMetrics(queue.client, queue.keys, 'failed', 5, T0 - MINUTE, 10);
      expect(await queue.getMetrics('failed')).toEqual({ meta: { count: 7, prevTS: T0, prevCount: 5 }, data: [], count: 0 });
      await recordMetrics(queue.client, queue.keys, 'failed', 1, T0 + 2 * MINUTE, 10);
      expect(await queue.getMetrics('failed')).toEqual({ meta: { count: 8, prevTS: T0 + 2 * MINUTE, prevCount: 7 }, data: [0, 2], count: 2 });
      // Older than the kept minutes: the list keeps its entries where they are.
      await recordMetrics(queue.client, queue.keys, 'failed', 4, T0 - 30 * MINUTE, 10);
      expect(await queue.getMetrics('failed')).toEqual({ meta: { count: 12, prevTS: T0 + 2 * MINUTE, prevCount: 11 }, data: [0, 2], count: 2 });
    } finally {
      await queue.obliterate({ force: true });
      await queue.close();
    }
  });

  it('a late count from a worker with a smaller maxDataPoints goes to its minute\'s entry when the list holds it', async () => {
    const queue = new Queue(uniqueQueueName('metrics'), { connection: testConnection() });
    try {
      // A worker keeping 10 minutes closed T0 and 7 silent minutes: 8 entries, T0's at index 7.
      await recordMetrics(queue.client, queue.keys, 'completed', 1, T0, 10);
      await recordMetrics(queue.client, queue.keys, 'completed', 1, T0 + 8 * MINUTE, 10);
      // A worker keeping 3 sends late counts of T0 + 2 (index 5) and of T0 (index 7).
      await recordMetrics(queue.client, queue.keys, 'completed', 4, T0 + 2 * MINUTE, 3);
      await recordMetrics(queue.client, queue.keys, 'completed', 2, T0, 3);
      expect(await queue.getMetrics('completed')).toEqual({
        meta: { count: 8, prevTS: T0 + 8 * MINUTE, prevCount: 7 }, data: [0, 0, 0, 0, 0, 4, 0, 3], count: 8,
      });
      // When it closes a minute, its own LTRIM shortens the list to 3 (the shortest setting trims).
      await recordMetrics(queue.client, queue.keys, 'completed', 1, T0 + 9 * MINUTE, 3);
      expect((await queue.getMetrics('completed')).data).toEqual([1, 0, 0]);
    } finally {
      await queue.obliterate({ force: true });
      await queue.close();
    }
  });

  it('any order of flushes from several workers gives the list a model of the minutes predicts', async () => {
    const queue = new Queue(uniqueQueueName('metrics'), { connection: testConnection() });
    const maxPoints = 7;
    let seed = 12345;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    // The model: jobs per minute; the first minute ever recorded bounds the list's old end.
    const perMinute = new Map<number, number>();
    let first: number | undefined;
    let newest: number | undefined;
    let total = 0;
    try {
      for (let step = 0; step < 120; step++) {
        // Mostly the newest minute or the next few (idle gaps), sometimes a late one.
        const roll = random(10);
        const at = newest ?? T0;
        const minute = roll < 5 ? at : roll < 8 ? at + (1 + random(maxPoints + 2)) * MINUTE : at - random(maxPoints + 3) * MINUTE;
        const jobs = 1 + random(4);
        await recordMetrics(queue.client, queue.keys, 'completed', jobs, minute, maxPoints);
        first ??= minute;
        newest = Math.max(newest ?? minute, minute);
        perMinute.set(minute, (perMinute.get(minute) ?? 0) + jobs);
        total += jobs;
        const length = Math.min(maxPoints, (newest - first) / MINUTE);
        const data = Array.from({ length }, (_, i) => perMinute.get(newest! - (i + 1) * MINUTE) ?? 0);
        const metrics = await queue.getMetrics('completed');
        expect({ step, metrics }).toEqual({ step, metrics: { meta: { count: total, prevTS: newest, prevCount: total - (perMinute.get(newest) ?? 0) }, data, count: length } });
      }
    } finally {
      await queue.obliterate({ force: true });
      await queue.close();
    }
  });

  // MONITOR sees one server's commands.
  singleNodeIt('however long the silence, one call pushes at most maxDataPoints entries', async () => {
    const admin = new Redis(redisUrl());
    const queue = new Queue(uniqueQueueName('metrics'), { connection: redisUrl() });
    try {
      await recordMetrics(queue.client, queue.keys, 'completed', 1, T0, 2500);
      let pushed = 0;
      const stopMonitor = await monitorCommands(admin.options.host ?? '127.0.0.1', admin.options.port ?? 6379, (args, source) => {
        if (source === 'lua' && args[0].toLowerCase() === 'lpush' && args[1].includes(queue.name)) pushed += args.length - 2;
      });
      await recordMetrics(queue.client, queue.keys, 'completed', 1, T0 + 100_000 * MINUTE, 2500);
      await queue.getMetrics('completed'); // a round trip after the script: MONITOR has shown its commands
      await eventually(() => pushed >= 2500, 5_000, 'the pushes seen');
      stopMonitor();
      expect(pushed).toBe(2500);
      const metrics = await queue.getMetrics('completed', 0, 0);
      expect(metrics.count).toBe(2500);
    } finally {
      admin.disconnect();
      await queue.obliterate({ force: true });
      await queue.close();
    }
  });

  it('getMetrics answers a promise, and a bad argument rejects it by name before Redis is read', async () => {
    const queue = new Queue(uniqueQueueName('metrics'), { connection: testConnection() });
    try {
      for (const [args, field] of [[['waiting'], 'type'], [['completed', 1.5], 'start'], [['failed', 0, 'x'], 'end']] as const) {
        const answer = (queue.getMetrics as (...a: unknown[]) => unknown)(...args);
        expect(answer).toBeInstanceOf(Promise);
        const error = await (answer as Promise<unknown>).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(EchoMQOptionError);
        expect((error as EchoMQOptionError).field).toBe(field);
      }
    } finally {
      await queue.close();
    }
  });

  it('keeps at most maxDataPoints minutes, however long the silence (bounded pushes)', async () => {
    const queue = new Queue(uniqueQueueName('metrics'), { connection: testConnection() });
    try {
      await recordMetrics(queue.client, queue.keys, 'failed', 1, T0, 5);
      await recordMetrics(queue.client, queue.keys, 'failed', 1, T0 + 100_000 * MINUTE, 5);
      const metrics = await queue.getMetrics('failed');
      expect(metrics.count).toBe(5);
      expect(metrics.data).toEqual([0, 0, 0, 0, 0]);
      expect(metrics.meta).toEqual({ count: 2, prevTS: T0 + 100_000 * MINUTE, prevCount: 1 });
      // obliterate takes the metrics keys with the rest.
      await queue.obliterate({ force: true });
      const client = newClient();
      expect(await queueKeys(client, queue.name)).toEqual([]);
      client.disconnect();
    } finally {
      await queue.close();
    }
  });
});

describe('metrics: a worker with metrics', () => {
  it('counts what it completed and what failed for good (not a failure that is retried), sent at close', async () => {
    const connection = testConnection();
    const queue = new Queue(uniqueQueueName('metrics'), { connection });
    const worker = new Worker(queue.name, async (job) => {
      if ((job.data as { fail?: boolean }).fail) throw new Error('no');
      if ((job.data as { flaky?: boolean }).flaky && job.attemptsMade === 0) throw new Error('once');
      return 'ok';
    }, { connection, concurrency: 4, metrics: { maxDataPoints: 60 } });
    const errors: Error[] = [];
    worker.on('error', (error) => errors.push(error));
    try {
      let settled = 0;
      worker.on('completed', () => settled++);
      worker.on('failed', (_job, _error, willRetry) => (settled += willRetry ? 0 : 1));
      await queue.addBulk([
        ...Array.from({ length: 5 }, () => ({ name: 'ok', data: {} })),
        ...Array.from({ length: 2 }, () => ({ name: 'bad', data: { fail: true } })),
        { name: 'flaky', data: { flaky: true }, opts: { attempts: 2 } },
      ]);
      await eventually(() => settled === 8, 10_000);
      await worker.close();
      const completed = await queue.getMetrics('completed');
      const failed = await queue.getMetrics('failed');
      expect(completed.meta.count).toBe(6);
      expect(failed.meta.count).toBe(2);
      expect(completed.meta.prevTS % MINUTE).toBe(0);
      expect(errors).toEqual([]);
    } finally {
      await worker.close(true);
      await queue.obliterate({ force: true });
      await queue.close();
    }
  });

  it('a cancel is counted when a worker held the job, not when queue.cancelJob failed it before it ran', async () => {
    const connection = testConnection();
    const queue = new Queue(uniqueQueueName('metrics'), { connection });
    // Cancelled before any worker exists: cancelJob-12 fails it in Redis.
    const waiting = await queue.add('never-run', {});
    expect(await queue.cancelJob(waiting.id, 'before it ran')).toBe(true);
    const started: string[] = [];
    const worker = new Worker(queue.name, async (job, { signal }) => {
      started.push(job.id);
      await new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
    }, { connection, lockDuration: 1000, metrics: { maxDataPoints: 60 } });
    const failed: string[] = [];
    worker.on('failed', (job, _error, willRetry) => !willRetry && failed.push(job.id));
    try {
      const running = await queue.add('runs', {}, { attempts: 3 });
      await eventually(() => started.includes(running.id), 10_000, 'the job running');
      expect(await queue.cancelJob(running.id, 'while it ran')).toBe(true);
      await eventually(() => failed.includes(running.id), 10_000, 'the running job failed as cancelled');
      await worker.close();
      expect(await (await queue.getJob(waiting.id))!.getState()).toBe('failed');
      expect(failed).toEqual([running.id]);
      expect((await queue.getMetrics('failed')).meta.count).toBe(1);
    } finally {
      await worker.close(true);
      await queue.obliterate({ force: true });
      await queue.close();
    }
  });

  it('two workers recording the same minutes: every job counted once, in the minute it finished', async () => {
    const connection = testConnection();
    const queue = new Queue(uniqueQueueName('metrics'), { connection });
    const workers = [0, 1].map(() => new Worker(queue.name, async () => 'ok', { connection, concurrency: 3, metrics: { maxDataPoints: 60 } }));
    const errors: Error[] = [];
    let completed = 0;
    for (const worker of workers) {
      worker.on('error', (error) => errors.push(error));
      worker.on('completed', () => completed++);
    }
    try {
      await queue.addBulk(Array.from({ length: 60 }, (_, i) => ({ name: 'n', data: { i } })));
      await eventually(() => completed === 60, 10_000, 'the 60 jobs');
      await Promise.all(workers.map((worker) => worker.close()));
      const metrics = await queue.getMetrics('completed');
      expect(metrics.meta.count).toBe(60);
      // Whether a minute turned during the run or not, open minute + closed minutes hold all 60.
      expect(metrics.meta.count - metrics.meta.prevCount + metrics.data.reduce((sum, n) => sum + n, 0)).toBe(60);
      expect(errors).toEqual([]);
    } finally {
      await Promise.all(workers.map((worker) => worker.close(true)));
      await queue.obliterate({ force: true });
      await queue.close();
    }
  });

  it('refuses a bad maxDataPoints before it connects', () => {
    for (const metrics of [{ maxDataPoints: 0 }, { maxDataPoints: 1.5 }, { maxDataPoints: 80_641 }, {}, 5]) {
      let error: unknown;
      try {
        new Worker('never', async () => undefined, { autorun: false, metrics: metrics as never });
      } catch (thrown) {
        error = thrown;
      }
      expect(error).toBeInstanceOf(EchoMQOptionError);
      expect((error as EchoMQOptionError).field).toMatch(/^metrics/);
    }
  });

  // MONITOR sees one server's commands.
  singleNodeIt('a worker without metrics sends nothing for them; one with metrics, one recordMetrics call per type and minute flushed', async () => {
    const admin = new Redis(redisUrl());
    const sha = SCRIPTS.recordMetrics.sha;
    async function run(metrics: boolean): Promise<string[]> {
      const queue = new Queue(uniqueQueueName('metrics-hot'), { connection: redisUrl() });
      await queue.addBulk(Array.from({ length: 50 }, (_, i) => ({ name: 'n', data: { i } })));
      const sent: string[] = [];
      const stopMonitor = await monitorCommands(admin.options.host ?? '127.0.0.1', admin.options.port ?? 6379, (args, source) => {
        if (source !== 'lua' && args.some((arg) => arg.includes(queue.name) || arg === sha)) sent.push(args.join(' '));
      });
      const worker = new Worker(queue.name, async () => 'ok', { connection: redisUrl(), ...(metrics ? { metrics: { maxDataPoints: 10 } } : {}) });
      let completed = 0;
      worker.on('completed', () => completed++);
      await eventually(() => completed === 50, 10_000);
      await worker.close();
      // MONITOR's lines reach this socket after the commands ran: wait for a marker sent after close,
      // so the flush at close is counted however late its line arrives.
      const marker = `${queue.name}:monitor-marker`;
      await admin.exists(marker);
      await eventually(() => sent.some((line) => line.includes(marker)), 5_000, 'the marker seen');
      stopMonitor();
      await queue.obliterate({ force: true });
      await queue.close();
      return sent;
    }
    try {
      const without = await run(false);
      expect(without.length).toBeGreaterThan(50);
      expect(without.filter((line) => line.includes(sha) || line.includes(':metrics'))).toEqual([]);
      const withMetrics = await run(true);
      const calls = withMetrics.filter((line) => line.includes(sha) || line.startsWith('eval '));
      const recordCalls = calls.filter((line) => line.includes(':metrics:completed'));
      // The 50 jobs finish within a few ms: one flush at close, two if a minute turned meanwhile.
      expect(recordCalls.length).toBeGreaterThanOrEqual(1);
      expect(recordCalls.length).toBeLessThanOrEqual(2);
    } finally {
      admin.disconnect();
    }
  });
});
