import { afterEach, describe, expect, it } from '@jest/globals';
import { firstValueFrom, filter, toArray, take } from 'rxjs';
import { EchoMQError, EchoMQOptionError, QueueEvents, Worker, type Job } from '../lib/index.js';
import { eventually, newClient, testConnection, sleep } from './support/redis.js';
import { collect, Harness } from './support/workers.js';

// The Worker's lifecycle against real Redis: pause, concurrency, close, job methods, events.
let h: Harness;
afterEach(async () => {
  await h.close();
  expect(h.errors).toEqual([]);
});

/** A processor that waits until `release()` is called, so a test controls when jobs end. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { release: () => open(), wait: () => opened };
}

describe('Worker: pause and concurrency', () => {
  it('takes nothing while the queue is paused, and resumes where it stopped', async () => {
    h = new Harness();
    const worker = h.worker(async () => null);
    await worker.waitUntilReady();
    await h.queue.pause();
    await h.queue.add('held', {});
    await sleep(500);
    expect(await h.queue.getJobCounts('paused', 'active', 'completed')).toEqual({ paused: 1, active: 0, completed: 0 });
    const done = collect(worker, 'completed', 1);
    await h.queue.resume();
    expect((await done)[0].name).toBe('held');
  });

  it('lets a running job finish when the queue is paused', async () => {
    h = new Harness();
    const g = gate();
    const worker = h.worker(async () => { await g.wait(); return 'done'; });
    const done = collect(worker, 'completed', 1);
    await h.queue.addBulk([{ name: 'running', data: 0 }, { name: 'waiting', data: 0 }]);
    await eventually(() => worker.runningCount === 1);
    await h.queue.pause();
    g.release();
    expect((await done)[0].name).toBe('running');
    await sleep(300);
    expect(await h.queue.getJobCounts('paused', 'active')).toEqual({ paused: 1, active: 0 });
  });

  it('honours concurrency exactly: never more, and reaches it', async () => {
    h = new Harness();
    let now = 0;
    let max = 0;
    const worker = h.worker(async () => {
      max = Math.max(max, ++now);
      await sleep(40);
      now--;
    }, { concurrency: 5 });
    const done = collect(worker, 'completed', 60);
    await h.queue.addBulk(Array.from({ length: 60 }, (_, i) => ({ name: 'c', data: i })));
    await done;
    expect(max).toBe(5);
  });

  it('refuses a concurrency of 0 and a lockRenewTime at or over lockDuration', () => {
    expect(() => new Worker('q', async () => null, { concurrency: 0, autorun: false, connection: testConnection() }))
      .toThrow(expect.objectContaining({ field: 'concurrency' }));
    expect(() => new Worker('q', async () => null, { lockDuration: 1000, lockRenewTime: 1000, autorun: false }))
      .toThrow(EchoMQOptionError);
    expect(() => new Worker('a:b', async () => null, { autorun: false })).toThrow(EchoMQOptionError);
    h = new Harness();
  });
});

describe('Worker: close', () => {
  it('close() waits for a running job, renewing its lock past lockDuration, and it completes', async () => {
    h = new Harness();
    const client = newClient();
    const g = gate();
    const worker = h.worker(async () => { await g.wait(); return 'finished'; }, { lockDuration: 1000, lockRenewTime: 250, stalledInterval: 500 });
    const job = await h.queue.add('long', {});
    await eventually(() => worker.runningCount === 1);
    let closed = false;
    const closing = worker.close().then(() => (closed = true));
    await sleep(2000); // two lock durations: only the heartbeat keeps the lock alive
    expect(closed).toBe(false);
    expect(await client.exists(h.queue.keys.lock(job.id))).toBe(1);
    g.release();
    await closing;
    const stored = await h.queue.getJob(job.id);
    expect(await stored?.getState()).toBe('completed');
    expect(stored?.returnvalue).toBe('finished');
    expect(stored?.attemptsStarted).toBe(1);
    expect(stored?.stalledCounter).toBe(0);
    expect(await client.exists(h.queue.keys.lock(job.id))).toBe(0);
    await client.quit();
  });

  it('close() takes no new job while it waits', async () => {
    h = new Harness();
    const g = gate();
    const worker = h.worker(async () => { await g.wait(); return 1; }, { concurrency: 1 });
    await h.queue.addBulk([{ name: 'first', data: 0 }, { name: 'second', data: 0 }]);
    await eventually(() => worker.runningCount === 1);
    const closing = worker.close();
    g.release();
    await closing;
    expect(worker.status).toBe('closed');
    expect(await h.queue.getJobCounts('wait', 'active', 'completed')).toEqual({ wait: 1, active: 0, completed: 1 });
  });

  it('a throwing active listener is reported as an error and the job still runs and completes', async () => {
    h = new Harness();
    const worker = h.worker(async () => 'ran', { lockDuration: 2000 });
    worker.on('active', () => { throw new Error('listener blew up'); });
    const done = collect(worker, 'completed', 1);
    const job = await h.queue.add('listened', {});
    expect((await done)[0].id).toBe(job.id);
    expect(await h.queue.getJobCounts('active', 'completed')).toEqual({ active: 0, completed: 1 });
    expect(worker.lockManager.trackedCount(worker.id)).toBe(0);
    expect(h.errors.map((e) => e.message)).toEqual(['listener blew up']);
    h.errors.length = 0;
  });

  it('close(true) after close() stops the wait: the signal aborts and both closes resolve', async () => {
    h = new Harness();
    let aborted: unknown;
    const worker = h.worker(async (_job, { signal }) => {
      await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve()));
      aborted = signal.reason;
      await new Promise<never>(() => undefined); // never ends on its own
    }, { lockDuration: 5000 });
    await h.queue.add('hung', {});
    await eventually(() => worker.runningCount === 1);
    let gentleDone = false;
    const gentle = worker.close().then(() => (gentleDone = true));
    await sleep(200);
    expect(gentleDone).toBe(false);
    await worker.close(true);
    await gentle;
    expect(worker.status).toBe('closed');
    expect(aborted).toBeInstanceOf(Error);
  });

  it('close(true) does not wait: the signal aborts, the job stays active until its lock lapses', async () => {
    h = new Harness();
    let aborted: unknown;
    const worker = h.worker(async (_job, { signal }) => {
      await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve()));
      aborted = signal.reason;
      return 'late';
    }, { lockDuration: 5000 });
    const job = await h.queue.add('cut', {});
    await eventually(() => worker.runningCount === 1);
    await worker.close(true);
    expect(worker.status).toBe('closed');
    await eventually(() => aborted !== undefined);
    expect(await h.queue.getJobCounts('active', 'completed')).toEqual({ active: 1, completed: 0 });
    // Another worker's sweep gives it back once the lock lapsed, and runs it again.
    const client = newClient();
    // The lock lapses (we skip the wait), and the first worker's sweep guard (30 s) is cleared.
    await client.del(h.queue.keys.lock(job.id), h.queue.keys.stalledCheck);
    await client.quit();
    const again = h.worker(async () => 'second run', { stalledInterval: 300 });
    const [done] = await collect(again, 'completed', 1);
    expect(done.id).toBe(job.id);
    expect((await h.queue.getJob(job.id))?.attemptsStarted).toBe(2);
  });
});

describe('Job methods inside and after a run', () => {
  it('updateProgress, log and getState work inside the processor', async () => {
    h = new Harness();
    const states: string[] = [];
    const worker = h.worker(async (job) => {
      states.push(await job.getState());
      await job.updateProgress({ pct: 50 });
      await job.log('half way');
      await job.log('done');
      return 'ok';
    });
    const done = collect(worker, 'completed', 1);
    const job = await h.queue.add('p', {});
    expect(await job.getState()).toMatch(/wait|active/);
    await done;
    const stored = await h.queue.getJob(job.id);
    expect(states).toEqual(['active']);
    expect(stored?.progress).toEqual({ pct: 50 });
    expect(await stored?.getLogs()).toEqual(['half way', 'done']);
    expect(await stored?.getState()).toBe('completed');
  });

  it('remove() refuses a job a worker holds and removes it once finished', async () => {
    h = new Harness();
    const g = gate();
    const worker = h.worker(async () => { await g.wait(); return 1; });
    const done = collect(worker, 'completed', 1);
    const job = await h.queue.add('r', {});
    await eventually(() => worker.runningCount === 1);
    const refused = await job.remove().catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(EchoMQError);
    g.release();
    await done;
    await job.remove();
    expect(await h.queue.getJob(job.id)).toBeUndefined();
    expect(await job.getState()).toBe('unknown');
  });

  it('retry() sends a failed job back for a new round of attempts', async () => {
    h = new Harness();
    let runs = 0;
    const worker = h.worker(async () => { if (++runs === 1) throw new Error('first fails'); return 'second works'; });
    const failed = collect(worker, 'failed', 1);
    const job = await h.queue.add('again', {});
    await failed;
    const stored = (await h.queue.getJob(job.id))!;
    expect(await stored.getState()).toBe('failed');
    const done = collect(worker, 'completed', 1);
    await stored.retry();
    await done;
    const after = await h.queue.getJob(job.id);
    expect(after?.returnvalue).toBe('second works');
    expect(after?.attemptsStarted).toBe(2);
    await expect(after!.retry()).rejects.toThrow(EchoMQError);
  });
});

describe('QueueEvents and waitUntilFinished', () => {
  it('streams the lifecycle of a job as typed events', async () => {
    h = new Harness();
    const events = new QueueEvents(h.name, { connection: testConnection() });
    await events.waitUntilReady();
    const seen = firstValueFrom(events.events$.pipe(filter((e) => e.jobId === '1'), take(4), toArray()));
    h.worker(async (job: Job) => { await job.updateProgress(7); return { ok: true }; });
    await h.queue.add('e', {});
    const list = await seen;
    expect(list.map((e) => e.event)).toEqual(['waiting', 'active', 'progress', 'completed']);
    expect(list[3].fields.returnvalue).toBe('{"ok":true}');
    expect(list.every((e) => e.queue === h.name)).toBe(true);
    await events.close();
  });

  it('waitUntilFinished resolves with the result, rejects with the failure, and times out', async () => {
    h = new Harness();
    const events = new QueueEvents(h.name, { connection: testConnection() });
    await events.waitUntilReady();
    const g = gate();
    h.worker(async (job: Job) => {
      await g.wait();
      if (job.name === 'bad') throw new Error('it broke');
      return { sum: 3 };
    });
    const good = await h.queue.add('good', {});
    const bad = await h.queue.add('bad', {});
    await expect(good.waitUntilFinished(events, 200)).rejects.toThrow(/did not finish within 200 ms/);
    const goodResult = good.waitUntilFinished(events, 10_000);
    const badResult = bad.waitUntilFinished(events, 10_000);
    g.release();
    expect(await goodResult).toEqual({ sum: 3 });
    await expect(badResult).rejects.toThrow('it broke');
    // Already finished: answered from the job hash.
    expect(await good.waitUntilFinished(events, 1000)).toEqual({ sum: 3 });
    await events.close();
  });
});

describe('Worker: pause() and resume() (this worker only)', () => {
  it('pause() takes no new job, keeps renewing the running one, and resolves when it ended; resume() takes jobs again', async () => {
    h = new Harness();
    const client = newClient();
    const g = gate();
    const worker = h.worker(async (job) => { if (job.name === 'first') await g.wait(); return job.name; }, { lockDuration: 1000, lockRenewTime: 250 });
    const events: string[] = [];
    worker.on('paused', () => events.push('paused'));
    worker.on('resumed', () => events.push('resumed'));
    const first = await h.queue.add('first', {});
    await eventually(() => worker.runningCount === 1);
    expect([worker.isRunning(), worker.isPaused()]).toEqual([true, false]);
    let paused = false;
    const pausing = worker.pause().then(() => (paused = true));
    expect([worker.isRunning(), worker.isPaused(), worker.status]).toEqual([true, true, 'paused']);
    await h.queue.add('second', {});
    await sleep(1500); // past lockDuration: only the heartbeat keeps the first job's lock
    expect(paused).toBe(false);
    expect(await client.exists(h.queue.keys.lock(first.id))).toBe(1);
    const firstDone = collect(worker, 'completed', 1);
    g.release();
    await pausing;
    expect((await firstDone)[0].name).toBe('first');
    await sleep(300);
    expect(await h.queue.getJobCounts('wait', 'active', 'completed')).toEqual({ wait: 1, active: 0, completed: 1 });
    const secondDone = collect(worker, 'completed', 1);
    worker.resume();
    expect((await secondDone)[0].name).toBe('second');
    expect(events).toEqual(['paused', 'resumed']);
    await client.quit();
  });

  it('a paused worker blocked on an empty queue wakes when resumed, and takes what was added meanwhile', async () => {
    h = new Harness();
    const worker = h.worker(async (job) => job.name, { drainDelay: 30 });
    await worker.waitUntilReady();
    await sleep(200); // idle: blocked on the marker
    await worker.pause();
    await h.queue.add('meanwhile', {});
    await sleep(500);
    expect(await h.queue.getJobCounts('wait', 'completed')).toEqual({ wait: 1, completed: 0 });
    const done = collect(worker, 'completed', 1);
    worker.resume();
    expect((await done)[0].name).toBe('meanwhile');
    // Paused and resumed while idle, with nothing added meanwhile: a job added later still wakes it.
    await worker.pause();
    worker.resume();
    const later = collect(worker, 'completed', 1);
    await h.queue.add('later', {});
    expect((await later)[0].name).toBe('later');
  });

  it('a paused worker passes the wake-up on: another idle worker takes a job added meanwhile at once', async () => {
    h = new Harness();
    const paused = h.worker(async () => 'paused one', { drainDelay: 10 });
    await paused.waitUntilReady();
    await sleep(200); // blocked on the marker first: the next marker pops here
    const other = h.worker(async () => 'other', { drainDelay: 10 });
    await other.waitUntilReady();
    await sleep(200);
    await paused.pause(true);
    const done = collect(other, 'completed', 1);
    const added = Date.now();
    await h.queue.add('meanwhile', {});
    await done;
    // Before, the paused worker swallowed the marker and the other one woke at its drainDelay (10 s).
    expect(Date.now() - added).toBeLessThan(3000);
  });

  it('pause(true) does not wait; close() while paused waits for the running job and closes', async () => {
    h = new Harness();
    const g = gate();
    const worker = h.worker(async () => { await g.wait(); return 'done'; });
    await h.queue.add('running', {});
    await eventually(() => worker.runningCount === 1);
    await worker.pause(true);
    expect(worker.runningCount).toBe(1);
    const done = collect(worker, 'completed', 1);
    const closing = worker.close();
    expect(worker.isRunning()).toBe(false);
    g.release();
    await closing;
    expect((await done)[0].name).toBe('running');
    expect(worker.status).toBe('closed');
    worker.resume(); // nothing to resume once closed
    expect(worker.status).toBe('closed');
  });
});

describe("Worker: 'stalled' listeners", () => {
  it('a throwing stalled listener is reported, and every other stalled job is still announced', async () => {
    h = new Harness();
    const client = newClient();
    const jobs = await h.queue.addBulk([{ name: 'a', data: 0 }, { name: 'b', data: 0 }]);
    // As a crashed worker leaves them: active, seen by a previous sweep, no lock.
    for (let moved = 0; moved < jobs.length; moved++) await client.lmove(h.queue.keys.wait, h.queue.keys.active, 'RIGHT', 'LEFT');
    await client.sadd(h.queue.keys.stalled, ...jobs.map((job) => job.id));
    const worker = h.worker(async () => 'recovered', { autorun: false, stalledInterval: 60_000 });
    const announced: string[] = [];
    worker.on('stalled', (jobId) => {
      announced.push(jobId);
      throw new Error(`listener failed on ${jobId}`);
    });
    const done = collect(worker, 'completed', 2);
    void worker.run();
    await done;
    expect(announced.sort()).toEqual(jobs.map((job) => job.id).sort());
    expect(h.errors.map((error) => error.message).sort()).toEqual(jobs.map((job) => `listener failed on ${job.id}`).sort());
    h.errors.length = 0;
    await client.quit();
  });
});
