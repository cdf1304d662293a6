import { afterEach, describe, expect, it } from '@jest/globals';
import { EchoMQOptionError, Queue, type Job } from '../lib/index.js';
import { parseSchedulerJobId, Scripts } from '../lib/internal.js';
import { partitionOf } from '../lib/protocol/partitions.js';
import { eventually, newClient, queueKeys, sleep, testConnection } from './support/redis.js';
import { Harness } from './support/workers.js';

// Job schedulers against real Redis and real time, with short periods: the jobs of the next two
// slots, one job per slot, missed slots, a worker lost at its pickup, limit, endDate, startDate,
// removal and replacement, template options, the repair, partitions. Slot arithmetic, DST and
// option checks are in scheduler-slots.test.ts; the Nest face in nest-schedulers.test.ts.
let h: Harness;
const extraQueues: Queue[] = [];
afterEach(async () => {
  await Promise.all(extraQueues.splice(0).map((q) => q.close()));
  await h.close();
  expect(h.errors).toEqual([]);
});

const slotOf = (jobId: string) => parseSchedulerJobId(jobId)!.slot;

/** Handler runs per slot, and a worker's completions, for one scheduler's jobs. */
function ledger() {
  const runs = new Map<number, number>();
  const handler = async (job: Job) => {
    runs.set(slotOf(job.id), (runs.get(slotOf(job.id)) ?? 0) + 1);
    return null;
  };
  return { runs, handler };
}

/** The completed jobs' slots, sorted. */
async function completedSlots(queue: Queue): Promise<number[]> {
  const jobs = await queue.getJobs('completed');
  return jobs.map((job) => slotOf(job.id)).sort((a, b) => a - b);
}

describe('upsertJobScheduler', () => {
  it('makes the scheduler and the delayed jobs of its next two slots, and returns the first', async () => {
    h = new Harness();
    const before = Date.now();
    const job = await h.queue.upsertJobScheduler('report', { every: 60_000 }, { name: 'build-report', data: { format: 'pdf' }, opts: { attempts: 3 } });
    expect(job).toBeDefined();
    const slot = Math.ceil(before / 60_000) * 60_000;
    expect(job!.id).toBe(`repeat:report:${slot}`);
    expect(job!.repeatJobKey).toBe('report');
    expect(job!.name).toBe('build-report');
    expect(job!.data).toEqual({ format: 'pdf' });
    expect(job!.opts).toEqual({ attempts: 3 });
    expect(await job!.getState()).toBe('delayed');
    expect(await h.queue.getJobScheduler('report')).toEqual({
      key: 'report', name: 'build-report', every: 60_000, next: slot, after: slot + 60_000, iterationCount: 2,
      template: { data: { format: 'pdf' }, opts: { attempts: 3 } },
    });
    expect((await h.queue.getJobs('delayed')).map((j) => j.id).sort()).toEqual([`repeat:report:${slot}`, `repeat:report:${slot + 60_000}`]);
  });

  it('changes nothing when called again with the same arguments, from many instances at once', async () => {
    h = new Harness();
    const client = newClient();
    try {
      const instances = [h.queue, ...Array.from({ length: 3 }, () => new Queue(h.name, { connection: h.connection }))];
      extraQueues.push(...instances.slice(1));
      const upsert = (q: Queue) => q.upsertJobScheduler('sync', { pattern: '0 */5 * * * *' }, { data: { full: false } });
      const first = await Promise.all(instances.map(upsert));
      expect(new Set(first.map((j) => j!.id)).size).toBe(1);
      const events = await client.xlen(h.queue.keys.events);
      const again = await Promise.all(instances.map(upsert));
      expect(again.map((j) => j!.id)).toEqual(first.map((j) => j!.id));
      expect(await client.xlen(h.queue.keys.events)).toBe(events);
      expect((await h.queue.getJobScheduler('sync'))!.iterationCount).toBe(2);
      expect(await h.queue.getJobCounts('delayed')).toEqual({ delayed: 2 });
    } finally {
      client.disconnect();
    }
  });

  it('refuses bad input before Redis is touched, naming the field', async () => {
    h = new Harness();
    const client = newClient();
    try {
      const refusals: Array<[() => Promise<unknown>, string]> = [
        [() => h.queue.upsertJobScheduler('bad', { pattern: 'every day' }), 'repeat.pattern'],
        [() => h.queue.upsertJobScheduler('bad', { every: 1000, pattern: '* * * * *' }), 'repeat.pattern'],
        [() => h.queue.upsertJobScheduler('bad', { pattern: '* * * * *', tz: 'Nowhere/Else' }), 'repeat.tz'],
        [() => h.queue.upsertJobScheduler('bad', { every: -5 }), 'repeat.every'],
        [() => h.queue.upsertJobScheduler('bad:1700000000000', { every: 1000 }), 'jobSchedulerId'],
        [() => h.queue.upsertJobScheduler('bad:', { every: 1000 }), 'jobSchedulerId'],
        [() => h.queue.upsertJobScheduler('bad', { every: 1000 }, { opts: { jobId: 'x' } } as never), 'template.opts.jobId'],
        [() => h.queue.upsertJobScheduler('bad', { every: 1000 }, { opts: { delay: 5 } } as never), 'template.opts.delay'],
        [() => h.queue.upsertJobScheduler('bad', { every: 1000 }, { opts: { attempts: 0 } }), 'template.opts.attempts'],
        [() => h.queue.upsertJobScheduler('bad', { every: 1000 }, { data: () => 1 }), 'template.data'],
        [() => h.queue.upsertJobScheduler('bad', { every: 1000 }, { name: '' }), 'template.name'],
      ];
      for (const [call, field] of refusals) {
        const error = await call().then(() => undefined, (e: unknown) => e);
        expect({ field, error: error instanceof EchoMQOptionError ? error.field : error }).toEqual({ field, error: field });
      }
      expect(await queueKeys(client, h.name)).toEqual([]);
    } finally {
      client.disconnect();
    }
  });
});

describe('scheduler ids with ":"', () => {
  it('tenant:region:task runs, reads back and is removed like any id; its jobs\' ids parse to it', async () => {
    h = new Harness();
    const ran: string[] = [];
    h.worker(async (job) => void ran.push(job.id));
    await h.queue.upsertJobScheduler('tenant:eu:nightly', { every: 200 }, { name: 'tick' });
    await eventually(async () => ran.length >= 2, 5000, 'two slots run');
    expect(ran.map((id) => parseSchedulerJobId(id)!.schedulerId)).toEqual(ran.map(() => 'tenant:eu:nightly'));
    expect(await h.queue.getJobScheduler('tenant:eu:nightly')).toMatchObject({ key: 'tenant:eu:nightly', every: 200 });
    expect(await h.queue.removeJobScheduler('tenant:eu:nightly')).toBe(true);
    expect(await h.queue.getJobSchedulersCount()).toBe(0);
  });
});

describe('running a schedule', () => {
  it('runs exactly one job per slot, on time, with ten workers and three instances upserting', async () => {
    h = new Harness();
    const { runs, handler } = ledger();
    for (let i = 0; i < 10; i++) h.worker(handler, { concurrency: 2, drainDelay: 5 });
    const instances = Array.from({ length: 3 }, () => new Queue(h.name, { connection: h.connection }));
    extraQueues.push(...instances);
    await Promise.all(instances.map((q) => q.upsertJobScheduler('tick', { every: 200 })));
    await eventually(() => runs.size >= 30, 20_000, '30 slots to run');
    await h.queue.removeJobScheduler('tick');
    await eventually(async () => (await h.queue.getJobCounts('active')).active === 0);

    const slots = await completedSlots(h.queue);
    expect(slots.length).toBeGreaterThanOrEqual(30);
    expect(new Set(slots).size).toBe(slots.length);
    expect(slots.slice(1).map((s, i) => s - slots[i])).toEqual(slots.slice(1).map(() => 200));
    expect([...runs.values()].filter((n) => n !== 1)).toEqual([]);
    // Each started at its slot, not after a poll (drainDelay is 5 s): a loose bound, not a speed figure.
    for (const job of await h.queue.getJobs('completed')) expect(job.processedOn! - slotOf(job.id)).toBeLessThan(1_000);
  });

  it('goes on when every worker is restarted mid-run: no slot twice, one job for the slots of the gap', async () => {
    h = new Harness();
    const { runs, handler } = ledger();
    const first = Array.from({ length: 3 }, () => h.worker(handler, { concurrency: 2 }));
    await h.queue.upsertJobScheduler('tick', { every: 200 });
    await eventually(() => runs.size >= 5, 10_000, 'five slots');
    await Promise.all(first.map((w) => w.close()));
    const downFrom = Date.now();
    await sleep(700);
    const upAt = Date.now();
    for (let i = 0; i < 3; i++) h.worker(handler, { concurrency: 2 });
    await eventually(() => [...runs.keys()].filter((s) => s > upAt).length >= 5, 10_000, 'five slots after the restart');
    await h.queue.removeJobScheduler('tick');
    expect([...runs.values()].filter((n) => n !== 1)).toEqual([]);
    // The slots of the gap (after the last one run before it) give one job at most.
    const lastBefore = Math.max(...[...runs.keys()].filter((s) => s <= downFrom));
    expect([...runs.keys()].filter((s) => s > lastBefore && s <= upAt).length).toBeLessThanOrEqual(1);
  });

  it('gives one job for the slots missed while no worker ran, then keeps to the schedule', async () => {
    h = new Harness();
    await h.queue.upsertJobScheduler('tick', { every: 200 });
    await sleep(1_500); // both jobs of the chain are overdue, and five slots more
    const { runs, handler } = ledger();
    const returnedAt = Date.now();
    for (let i = 0; i < 3; i++) h.worker(handler, { concurrency: 5 }); // they take both overdue jobs at once
    await eventually(() => [...runs.keys()].filter((s) => s > returnedAt).length >= 3, 10_000, 'three slots after the return');
    await h.queue.removeJobScheduler('tick');
    const missed = [...runs.keys()].filter((s) => s <= returnedAt);
    expect(missed).toHaveLength(1);
    expect([...runs.values()].filter((n) => n !== 1)).toEqual([]);
  });

  it('runs nothing while the queue is paused, and one job for the paused slots on resume', async () => {
    h = new Harness();
    const { runs, handler } = ledger();
    h.worker(handler);
    await h.queue.pause();
    await h.queue.upsertJobScheduler('tick', { every: 200 });
    await sleep(1_200);
    expect(runs.size).toBe(0);
    const resumedAt = Date.now();
    await h.queue.resume();
    await eventually(() => [...runs.keys()].filter((s) => s > resumedAt).length >= 2, 10_000, 'two slots after the resume');
    await h.queue.removeJobScheduler('tick');
    expect([...runs.keys()].filter((s) => s <= resumedAt)).toHaveLength(1);
  });

  it('loses no slot when a worker dies between its pickup and the step (its job runs after the stalled sweep)', async () => {
    h = new Harness();
    const client = newClient();
    try {
      await h.queue.upsertJobScheduler('tick', { every: 400 });
      const { next, after: afterSlot } = (await h.queue.getJobScheduler('tick'))!;
      const after = afterSlot!;
      await sleep(next - Date.now() + 20);
      // A worker takes the first slot's job and dies before its step: nothing but the pickup happens.
      const scripts = new Scripts(client, h.queue.keys, 10_000);
      const taken = await scripts.moveToActive('dead-worker-token', 1_000, Date.now());
      expect(taken.job?.id).toBe(`repeat:tick:${next}`);

      const { runs, handler } = ledger();
      h.worker(handler, { lockDuration: 1_000, stalledInterval: 500 });
      await eventually(() => runs.has(next) && runs.has(after) && runs.has(after + 400), 15_000, 'the lost slot, the one after and the next');
      await h.queue.removeJobScheduler('tick');
      expect(runs.get(after)).toBe(1);
      expect(runs.get(next)).toBe(1);
      expect((await h.queue.getJob(`repeat:tick:${next}`))!.attemptsStarted).toBe(2);
      // The slot after the lost one ran on time, not after the lost job's lock lapsed.
      expect((await h.queue.getJob(`repeat:tick:${after}`))!.processedOn! - after).toBeLessThan(900);
    } finally {
      client.disconnect();
    }
  });

  it('stops after limit jobs, and the scheduler goes', async () => {
    h = new Harness();
    const { runs, handler } = ledger();
    h.worker(handler);
    await h.queue.upsertJobScheduler('thrice', { every: 100, limit: 3 });
    await eventually(async () => (await h.queue.getJobScheduler('thrice')) === undefined, 5_000, 'the scheduler to end');
    await sleep(400);
    expect(runs.size).toBe(3);
    expect(await h.queue.getJobSchedulersCount()).toBe(0);
    expect(await h.queue.getJobCounts('delayed', 'wait')).toEqual({ delayed: 0, wait: 0 });
  });

  it('keeps an ended scheduler as a record: the same upsert at the next boot does not count its limit again', async () => {
    h = new Harness();
    const { runs, handler } = ledger();
    h.worker(handler);
    await h.queue.upsertJobScheduler('twice', { every: 100, limit: 2 });
    await eventually(async () => (await h.queue.getJobScheduler('twice')) === undefined, 5_000, 'the scheduler to end');
    expect(await h.queue.upsertJobScheduler('twice', { every: 100, limit: 2 })).toBeUndefined();
    await sleep(400);
    expect(runs.size).toBe(2);
    // A changed upsert (a higher limit) goes on counting from the jobs already made.
    expect(await h.queue.upsertJobScheduler('twice', { every: 100, limit: 3 })).toBeDefined();
    await eventually(() => runs.size === 3, 5_000, 'one more run');
    await sleep(400);
    expect(runs.size).toBe(3);
    expect(await h.queue.removeJobScheduler('twice')).toBe(true);
  });

  it("with immediately, runs a pattern's first job at upsert, then the pattern's slots; the same upsert again makes no other; limit counts it", async () => {
    h = new Harness();
    const repeat = { pattern: '*/2 * * * * *', immediately: true, limit: 3 };
    // Upsert well inside a two-second period, so the immediate job starts long before the
    // pattern's first slot (one that came first would be a slot the immediate job stands for).
    const into = Date.now() % 2000;
    if (into < 100 || into > 800) await sleep((2100 - into) % 2000);
    const before = Date.now();
    const first = await h.queue.upsertJobScheduler('at-once', repeat);
    const immediate = slotOf(first!.id);
    expect(immediate).toBeGreaterThanOrEqual(before);
    expect(immediate).toBeLessThanOrEqual(Date.now());
    expect(await first!.getState()).toBe('waiting');
    const slot = Math.ceil(immediate / 2000) * 2000; // the pattern's first time after it
    expect(await h.queue.getJobScheduler('at-once')).toMatchObject({ next: immediate, after: slot, iterationCount: 2 });
    // Another instance's boot, before anything ran: the same job, nothing new.
    expect((await h.queue.upsertJobScheduler('at-once', repeat))!.id).toBe(first!.id);
    expect(await h.queue.getJobCounts('wait', 'delayed')).toEqual({ wait: 1, delayed: 1 });

    const { runs, handler } = ledger();
    h.worker(handler);
    await eventually(() => runs.has(immediate), 5_000, 'the immediate job to run');
    // And after it ran: no second immediate job, the chain goes on at the pattern's times.
    const again = await h.queue.upsertJobScheduler('at-once', repeat);
    expect(slotOf(again!.id) % 2000).toBe(0);
    await eventually(async () => (await h.queue.getJobScheduler('at-once')) === undefined, 10_000, 'the scheduler to end at its limit');
    await eventually(() => runs.size === 3, 5_000, 'the last run');
    await sleep(300);
    expect([...runs.keys()].sort((a, b) => a - b)).toEqual([immediate, slot, slot + 2000]);
    expect([...runs.values()]).toEqual([1, 1, 1]);
  });

  it('takes an endDate already past as a schedule that has ended (a boot after the end does not fail)', async () => {
    h = new Harness();
    expect(await h.queue.upsertJobScheduler('over', { every: 100, endDate: Date.now() - 1_000 })).toBeUndefined();
    expect(await h.queue.getJobScheduler('over')).toBeUndefined();
    // immediately included: no job at once after the end.
    expect(await h.queue.upsertJobScheduler('over-now', { every: 100, endDate: Date.now() - 1_000, immediately: true })).toBeUndefined();
    expect(await h.queue.upsertJobScheduler('over-cron', { pattern: '* * * * * *', endDate: Date.now() - 1_000, immediately: true })).toBeUndefined();
    expect(await h.queue.getJobCounts('delayed', 'wait')).toEqual({ delayed: 0, wait: 0 });
  });

  it('runs jobs that wait longer than a period behind other jobs (late, not never)', async () => {
    h = new Harness();
    const { runs, handler } = ledger();
    h.worker(async (job) => {
      if (job.name === 'filler') return new Promise((resolve) => setTimeout(resolve, 20));
      return handler(job);
    });
    // A steady backlog: about 300 ms of work always waits ahead of each scheduler job (period 200 ms).
    let producing = true;
    const producer = (async () => {
      while (producing) {
        const wait = (await h.queue.getJobCounts('wait')).wait ?? 0;
        if (wait < 15) await h.queue.addBulk(Array.from({ length: 15 - wait }, () => ({ name: 'filler', data: null })));
        await sleep(10);
      }
    })();
    await h.queue.upsertJobScheduler('tick', { every: 200 });
    await sleep(3_000);
    producing = false;
    await producer;
    const stoppedAt = Date.now();
    await eventually(async () => (await h.queue.getJobCounts('wait')).wait === 0, 10_000, 'the backlog to clear');
    await h.queue.removeJobScheduler('tick');
    // Each job ran late and stood for the slots it was late by: several runs in three seconds, none twice.
    expect([...runs.keys()].filter((s) => s < stoppedAt).length).toBeGreaterThanOrEqual(3);
    expect([...runs.values()].filter((n) => n !== 1)).toEqual([]);
  });

  it('lets one due job of the old schedule run when the schedule changes after missed slots', async () => {
    h = new Harness();
    const { runs, handler } = ledger();
    const data = new Map<number, unknown>();
    h.worker(async (job) => {
      data.set(slotOf(job.id), job.data);
      return handler(job);
    });
    await h.queue.pause();
    await h.queue.upsertJobScheduler('tick', { every: 200 }, { data: 'old' });
    await sleep(700); // both jobs of the old chain are due
    // The new chain's first slot is the first at or after the upsert's clock, so it can be
    // changedAt itself (a run that read changedAt on a 200 ms boundary failed so): the old
    // schedule's slots are those before changedAt, the new one's those at or after it.
    const changedAt = Date.now();
    await h.queue.upsertJobScheduler('tick', { every: 200 }, { data: 'new' });
    await h.queue.resume();
    await eventually(() => [...runs.keys()].filter((s) => s >= changedAt).length >= 2, 10_000, 'two slots of the new schedule');
    await h.queue.removeJobScheduler('tick');
    const before = [...runs.keys()].filter((s) => s < changedAt);
    expect(before).toHaveLength(1);
    expect(data.get(before[0])).toBe('old');
    expect([...runs.keys()].filter((s) => s >= changedAt).every((s) => data.get(s) === 'new')).toBe(true);
  });

  it('makes no job after endDate, and waits for a future startDate', async () => {
    h = new Harness();
    const { runs, handler } = ledger();
    h.worker(handler);
    const startDate = Date.now() + 700;
    const endDate = startDate + 450;
    await h.queue.upsertJobScheduler('window', { every: 100, startDate, endDate });
    expect((await h.queue.getJobScheduler('window'))!.next).toBe(startDate);
    await eventually(async () => (await h.queue.getJobScheduler('window')) === undefined, 5_000, 'the scheduler to end');
    await sleep(300);
    expect([...runs.keys()].sort((a, b) => a - b).map((s) => s - startDate)).toEqual([0, 100, 200, 300, 400]);
  });

  it('lets a running job finish when its scheduler is removed, and makes nothing after', async () => {
    h = new Harness();
    let release!: () => void;
    const running = new Promise<void>((resolve) => (release = resolve));
    const started: string[] = [];
    h.worker(async (job) => {
      started.push(job.id);
      await running;
      return 'done';
    });
    await h.queue.upsertJobScheduler('slow', { every: 150 });
    await eventually(() => started.length === 1, 5_000, 'the first job to start');
    expect(await h.queue.removeJobScheduler('slow')).toBe(true);
    expect(await h.queue.removeJobScheduler('slow')).toBe(false);
    release();
    const job = await h.queue.getJob(started[0]);
    await eventually(async () => (await job!.getState()) === 'completed', 5_000, 'the running job to complete');
    await sleep(500);
    expect(started).toHaveLength(1);
    expect(await h.queue.getJobCounts('delayed', 'wait', 'active')).toEqual({ delayed: 0, wait: 0, active: 0 });
  });

  it('replaces the waiting jobs when the schedule changes, never doubling a slot', async () => {
    h = new Harness();
    const first = await h.queue.upsertJobScheduler('sync', { every: 3_600_000 });
    const replaced = (await h.queue.getJobs('delayed')).map((j) => j.id);
    expect(replaced).toHaveLength(2);
    const changed = await h.queue.upsertJobScheduler('sync', { pattern: '* * * * * *' }, { data: { v: 2 } });
    expect(changed!.id).not.toBe(first!.id);
    for (const id of replaced) expect(await h.queue.getJob(id)).toBeUndefined();
    const scheduler = (await h.queue.getJobScheduler('sync'))!;
    expect(scheduler).toMatchObject({ pattern: '* * * * * *', iterationCount: 2, template: { data: { v: 2 } } });
    expect(scheduler.after! - scheduler.next).toBe(1_000);

    const { runs, handler } = ledger();
    h.worker(handler);
    await eventually(() => runs.size >= 3, 10_000, 'three runs of the new schedule');
    await h.queue.removeJobScheduler('sync');
    expect([...runs.keys()].every((slot) => slot % 1_000 === 0)).toBe(true);
    expect([...runs.values()].filter((n) => n !== 1)).toEqual([]);
  });

  it("runs each job with the template's options, and a failed run does not stop the schedule", async () => {
    h = new Harness();
    const attempts = new Map<string, number>();
    const completed: Job[] = [];
    const worker = h.worker(async (job) => {
      const n = (attempts.get(job.id) ?? 0) + 1;
      attempts.set(job.id, n);
      if (n === 1) throw new Error('first attempts fail');
      return n;
    });
    worker.on('completed', (job) => completed.push(job));
    await h.queue.upsertJobScheduler('flaky', { every: 200 }, { opts: { attempts: 2, backoff: 20, removeOnComplete: true, priority: 3 } });
    await eventually(() => completed.length >= 3, 10_000, 'three slots to complete on their second attempt');
    await h.queue.removeJobScheduler('flaky');
    expect(completed.slice(0, 3).map((j) => j.attemptsMade)).toEqual([2, 2, 2]);
    expect(completed.slice(0, 3).map((j) => j.opts.priority)).toEqual([3, 3, 3]);
    for (const job of completed.slice(0, 3)) expect(await h.queue.getJob(job.id)).toBeUndefined(); // removeOnComplete
  });

  it('restarts a chain whose two jobs were removed, in the rhythm of the stalled sweep', async () => {
    h = new Harness();
    await h.queue.upsertJobScheduler('tick', { every: 200 });
    for (const job of await h.queue.getJobs('delayed')) await job.remove();
    await sleep(1_300); // the scheduler's next slot is now more than a second behind
    const { runs, handler } = ledger();
    h.worker(handler, { stalledInterval: 500 });
    await eventually(() => runs.size >= 2, 10_000, 'the schedule to run again');
    await h.queue.removeJobScheduler('tick');
    expect(Math.min(...runs.keys())).toBeGreaterThan(Date.now() - 3_000);
  });
});

describe('reading and removing schedulers', () => {
  it('lists schedulers by their next slot, counts them, and obliterate removes them', async () => {
    h = new Harness();
    const client = newClient();
    try {
      await h.queue.upsertJobScheduler('hourly', { every: 3_600_000 });
      await h.queue.upsertJobScheduler('minutely', { every: 60_000 });
      await h.queue.upsertJobScheduler('daily', { pattern: '0 0 3 * * *', tz: 'Europe/Paris' });
      expect(await h.queue.getJobSchedulersCount()).toBe(3);
      // By next slot, ties by id. Slots coincide at some moments of the day (in an hour's last
      // minute the next minute is the next hour; 03:00 in Paris is a whole hour): the CI of
      // 3574670 ran at 19:59 UTC and read hourly before minutely. So the order is checked against
      // the slots the schedulers give, not written out.
      const ascending = await h.queue.getJobSchedulers(0, -1, true);
      const expected = [...ascending].sort((a, b) => a.next - b.next || (a.key < b.key ? -1 : 1)).map((s) => s.key);
      expect([...expected].sort()).toEqual(['daily', 'hourly', 'minutely']);
      expect(ascending.map((s) => s.key)).toEqual(expected);
      const minutely = ascending.find((s) => s.key === 'minutely')!;
      expect(ascending.every((s) => s.next >= minutely.next)).toBe(true); // the next minute comes first, or ties
      expect((await h.queue.getJobSchedulers()).map((s) => s.key)).toEqual([...expected].reverse());
      expect((await h.queue.getJobSchedulers(0, 0, true)).map((s) => s.key)).toEqual([expected[0]]);
      expect(await h.queue.getJobScheduler('weekly')).toBeUndefined();
      await h.queue.obliterate({ force: true });
      expect(await h.queue.getJobSchedulersCount()).toBe(0);
      expect(await queueKeys(client, h.name)).toEqual([]);
    } finally {
      client.disconnect();
    }
  });

  it('works on a partitioned queue: the scheduler and its jobs live in the partition of its id', async () => {
    h = new Harness();
    const queue = new Queue(h.name + 'p', { connection: testConnection(), partitions: 4 });
    extraQueues.push(queue);
    const client = newClient();
    const job = await queue.upsertJobScheduler('tick', { every: 200 });
    const others = ['a', 'b', 'c'];
    for (const id of others) await queue.upsertJobScheduler(id, { every: 60_000 });
    expect(await queue.getJobSchedulersCount()).toBe(4);
    expect((await queue.getJobSchedulers(0, 0, true)).map((s) => s.key)).toEqual(['tick']); // the soonest, across partitions
    const home = queue.partitionKeys[partitionOf('tick', 4)];
    expect(await client.zscore(home.schedulers, 'tick')).toBe(String(slotOf(job!.id)));
    expect(await client.exists(home.job(job!.id))).toBe(1);
    expect((await queue.getJob(job!.id))!.repeatJobKey).toBe('tick');

    const { Worker } = await import('../lib/index.js');
    const { runs, handler } = ledger();
    const worker = new Worker(queue.name, handler, { connection: testConnection(), partitions: 4 });
    try {
      await eventually(() => runs.size >= 3, 10_000, 'three slots on the partitioned queue');
      await queue.removeJobScheduler('tick');
      expect([...runs.values()].filter((n) => n !== 1)).toEqual([]);
    } finally {
      await worker.close(true);
      await queue.obliterate({ force: true });
      client.disconnect();
    }
  });
});
