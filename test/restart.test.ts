import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { startRedis, type RedisProcess } from './support/redis-process.js';
import { eventually, queueKeys, singleNodeDescribe } from './support/redis.js';
import { Harness } from './support/workers.js';

// A Redis restart mid-run, on a server of its own that keeps every write (AOF, fsync always):
// no job the worker was handed is lost or run twice, and the worker reconnects and goes on.
let redis: RedisProcess;
beforeAll(async () => {
  redis = await startRedis({ args: ['--appendonly', 'yes', '--appendfsync', 'always'] });
});
afterAll(() => redis.stop());

const TOTAL = 1000;

// Single-node: restarts a redis-server of its own.
singleNodeDescribe('Redis restart', () => {
  it('loses and duplicates nothing across a restart, then goes on with new jobs', async () => {
    const h = new Harness(redis.url);
    const client = new Redis(redis.url, { maxRetriesPerRequest: null });
    try {
      const runs = new Map<string, number>();
      const worker = h.worker(async (job) => {
        runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
        await new Promise((resolve) => setTimeout(resolve, 5));
        return job.id;
      }, { concurrency: 5, lockDuration: 3000, stalledInterval: 1000, drainDelay: 1 });
      await h.queue.addBulk(Array.from({ length: TOTAL }, (_, i) => ({ name: 'r', data: { i } })));

      // A clean shutdown a quarter through, then a crash (SIGKILL) half way: both mid-run.
      await eventually(() => runs.size >= TOTAL / 4, 20_000, 'a quarter of the jobs to run');
      await redis.restart({ downMs: 500 });
      await eventually(() => runs.size >= TOTAL / 2, 20_000, 'half of the jobs to run');
      const runBeforeCrash = runs.size;
      await redis.restart({ downMs: 300, signal: 'SIGKILL' });
      expect(runBeforeCrash).toBeLessThan(TOTAL);
      const completedCount = async () => (await h.queue.getJobCounts('completed')).completed;
      await eventually(async () => (await completedCount()) === TOTAL, 60_000, 'every job to complete');

      expect(runs.size).toBe(TOTAL);
      const twice = [...runs.entries()].filter(([, n]) => n > 1).map(([id]) => id);
      expect(twice).toEqual([]);
      expect(await h.queue.getJobCounts('wait', 'active', 'failed', 'delayed')).toEqual({ wait: 0, active: 0, failed: 0, delayed: 0 });
      expect((await queueKeys(client, h.name)).filter((k) => k.endsWith(':lock'))).toEqual([]);

      // The same worker, reconnected, takes jobs added after the restart.
      const after = await h.queue.add('after-restart', {});
      await eventually(async () => (await after.getState()) === 'completed', 20_000, 'the new job to complete');
      expect(worker.status).toBe('running');
    } finally {
      await h.close();
      client.disconnect();
    }
  }, 120_000);
});
