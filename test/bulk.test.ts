import { afterAll, describe, expect, it } from '@jest/globals';
import { newClient, queueKeys } from './support/redis.js';
import { Harness } from './support/workers.js';

// The acceptance of issue 2: 10,000 jobs added with addBulk, one worker at concurrency 50.
const TOTAL = 10_000;
const client = newClient();
afterAll(() => client.quit());

describe('bulk acceptance', () => {
  it('processes 10,000 jobs exactly once each, none lost, none left active, no lock left behind', async () => {
    const h = new Harness();
    try {
      const runs = new Map<string, number>();
      let completed = 0;
      let inFlight = 0;
      let maxInFlight = 0;
      let allDone!: () => void;
      const finished = new Promise<void>((resolve) => (allDone = resolve));
      // The first handlers wait until 50 are in flight together (or 10 s pass, and the assertion
      // below fails): a handler that only yields may end before the 50th starts on a loaded
      // machine, so the peak would measure the machine, not the worker's concurrency.
      let fullHouse!: () => void;
      const fifty = new Promise<void>((resolve) => (fullHouse = resolve));
      const giveUp = setTimeout(fullHouse, 10_000);
      const worker = h.worker(async (job) => {
        runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
        maxInFlight = Math.max(maxInFlight, ++inFlight);
        if (inFlight === 50) fullHouse();
        await (maxInFlight < 50 ? fifty : new Promise((resolve) => setImmediate(resolve)));
        inFlight--;
        return (job.data as { i: number }).i;
      }, { concurrency: 50 });
      worker.on('completed', () => { if (++completed === TOTAL) allDone(); });

      const batch = 1000;
      for (let start = 0; start < TOTAL; start += batch) {
        await h.queue.addBulk(Array.from({ length: batch }, (_, k) => ({ name: 'bulk', data: { i: start + k } })));
      }
      await finished;
      clearTimeout(giveUp);

      expect(runs.size).toBe(TOTAL);
      expect(maxInFlight).toBe(50);
      expect([...runs.values()].every((n) => n === 1)).toBe(true);
      expect(await h.queue.getJobCounts()).toEqual({ wait: 0, paused: 0, prioritized: 0, active: 0, delayed: 0, completed: TOTAL, failed: 0, 'waiting-children': 0 });
      const keys = await queueKeys(client, h.name);
      expect(keys.filter((k) => k.endsWith(':lock'))).toEqual([]);
      expect(await client.scard(h.queue.keys.stalled)).toBe(0);
      const [first, last] = await Promise.all([h.queue.getJob('1'), h.queue.getJob(String(TOTAL))]);
      expect([first?.returnvalue, first?.attemptsStarted, last?.returnvalue]).toEqual([0, 1, TOTAL - 1]);
      expect(h.errors).toEqual([]);
    } finally {
      await h.close();
    }
  }, 120_000);
});
