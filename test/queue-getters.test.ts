import { afterEach, describe, expect, it } from '@jest/globals';
import { EchoMQOptionError, type JobStateName } from '../lib/index.js';
import { eventually } from './support/redis.js';
import { Harness } from './support/workers.js';

// BullMQ's per-state shortcuts (getWaitingCount, getFailed, ...) on a queue with a job in every
// state a plain queue has: each answers what getJobCounts and getJobs answer for its state.

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('queue getters (BullMQ names)', () => {
  it('count and list each state, waiting taking in paused jobs as BullMQ does', async () => {
    const harness = (h = new Harness());
    const { queue } = harness;
    let openGate!: () => void;
    const gate = new Promise<void>((resolve) => (openGate = resolve));
    const worker = harness.worker(async (job) => {
      if (job.name === 'bad') throw new Error('no');
      if (job.name === 'hold') await gate;
      return job.name;
    }, { concurrency: 3 });
    const ok = await queue.add('ok', {});
    await eventually(async () => (await queue.getJobCounts('completed')).completed === 1, 5_000, 'the first completed');
    const ok2 = await queue.add('ok', {});
    const bad = await queue.add('bad', {});
    const hold = await queue.add('hold', {});
    await eventually(async () => {
      const counts = await queue.getJobCounts('completed', 'failed', 'active');
      return counts.completed === 2 && counts.failed === 1 && counts.active === 1;
    }, 5_000, 'two completed, one failed, one active');
    await worker.pause(true); // takes nothing more; the held job stays active
    const waiting = [await queue.add('w1', {}), await queue.add('w2', {})];
    const delayed = await queue.add('later', {}, { delay: 60_000 });
    const prioritized = await queue.add('urgent', {}, { priority: 5 });

    expect(await queue.getWaitingCount()).toBe(2);
    expect(await queue.getActiveCount()).toBe(1);
    expect(await queue.getDelayedCount()).toBe(1);
    expect(await queue.getPrioritizedCount()).toBe(1);
    expect(await queue.getCompletedCount()).toBe(2);
    expect(await queue.getFailedCount()).toBe(1);
    expect(await queue.getWaitingChildrenCount()).toBe(0);
    expect(await queue.getJobCountByTypes('completed', 'failed')).toBe(3);
    expect(await queue.getJobCountByTypes('waiting', 'wait')).toBe(2); // one state, counted once
    expect(await queue.getJobCountByTypes()).toBe(8); // every state

    // In BullMQ's orders: waiting oldest first, finished newest first.
    const ids = async (jobs: Promise<Array<{ id: string }>>) => (await jobs).map((job) => job.id);
    expect(await ids(queue.getWaiting())).toEqual(waiting.map((job) => job.id));
    expect(await ids(queue.getWaiting(0, 0))).toEqual([waiting[0].id]);
    expect(await ids(queue.getActive())).toEqual([hold.id]);
    expect(await ids(queue.getDelayed())).toEqual([delayed.id]);
    expect(await ids(queue.getPrioritized())).toEqual([prioritized.id]);
    expect(await ids(queue.getCompleted())).toEqual([ok2.id, ok.id]);
    expect(await ids(queue.getCompleted(1, 1))).toEqual([ok.id]);
    expect(await ids(queue.getFailed())).toEqual([bad.id]);
    expect(await queue.getWaitingChildren()).toEqual([]);

    // Paused, the waiting jobs are in `paused`: still counted and listed as waiting, not as `wait`.
    await queue.pause();
    const third = await queue.add('w3', {});
    expect(await queue.getJobCounts('wait', 'paused')).toEqual({ wait: 0, paused: 3 });
    expect(await queue.getWaitingCount()).toBe(3);
    expect(await queue.getJobCountByTypes('wait')).toBe(0);
    expect(await ids(queue.getWaiting())).toEqual([...waiting, third].map((job) => job.id));
    await queue.resume();
    openGate();
  });

  it('refuses a state it does not know, naming it', async () => {
    h = new Harness();
    let thrown: unknown;
    try {
      await h.queue.getJobCountByTypes('completed', 'done' as JobStateName);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(EchoMQOptionError);
    expect((thrown as EchoMQOptionError).field).toBe('types[1]');
  });
});
