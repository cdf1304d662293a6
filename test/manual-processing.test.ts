import { afterEach, describe, expect, it } from '@jest/globals';
import { EchoMQError, Worker } from '../lib/index.js';
import { eventually, sleep, testConnection, uniqueQueueName } from './support/redis.js';
import { producer, queue } from './support/test-resources.js';

// A Worker without a processor (BullMQ's "manually processing jobs"): getNextJob(token) takes a
// job under the caller's token, and the job's moveToCompleted, moveToFailed, moveToWait and
// extendLock release or renew it, each checking the lock as a worker's release does.

const workers: Worker[] = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.close()));
});

function manualWorker(name: string, opts: Record<string, unknown> = {}): Worker {
  const worker = new Worker(name, null, { connection: testConnection(), ...opts });
  workers.push(worker);
  return worker;
}

describe('a Worker without a processor', () => {
  it('takes a job by hand and completes it; run() is refused; none left: undefined without blocking', async () => {
    const q = queue(uniqueQueueName('manual'));
    const worker = manualWorker(q.name);
    await expect(worker.run()).rejects.toThrow(/no processor/);
    await q.add('a', { n: 1 });
    const job = (await worker.getNextJob('token-1'))!;
    expect(job.data).toEqual({ n: 1 });
    expect(await job.getState()).toBe('active');
    await job.moveToCompleted('done', 'token-1', false);
    const read = (await q.getJob(job.id))!;
    expect([await read.getState(), read.returnvalue, read.attemptsMade]).toEqual(['completed', 'done', 1]);
    expect(await worker.getNextJob('token-2', { block: false })).toBeUndefined();
  });

  it('moveToFailed retries while attempts are left, then fails; a wrong token is refused (-6) and changes nothing', async () => {
    const q = queue(uniqueQueueName('manual'));
    const worker = manualWorker(q.name);
    await q.add('a', {}, { attempts: 2 });
    const first = (await worker.getNextJob('t1'))!;
    await expect(first.moveToCompleted('x', 'someone-else')).rejects.toMatchObject({ code: -6 });
    expect(await first.getState()).toBe('active');
    await first.moveToFailed(new Error('first'), 't1');
    expect(await first.getState()).toBe('waiting');
    expect([first.attemptsMade, first.failedReason, first.stacktrace.length]).toEqual([1, 'first', 1]);
    const second = (await worker.getNextJob('t2'))!;
    expect(second.id).toBe(first.id);
    await second.moveToFailed(new Error('second'), 't2');
    const read = (await q.getJob(first.id))!;
    expect([await read.getState(), read.failedReason, read.attemptsMade]).toEqual(['failed', 'second', 2]);
    await expect(second.moveToFailed(new Error('again'), 't2')).rejects.toBeInstanceOf(EchoMQError);
  });

  it('moveToWait gives the job back without counting an attempt; extendLock renews only under its token', async () => {
    const q = queue(uniqueQueueName('manual'));
    const worker = manualWorker(q.name, { lockDuration: 1000 });
    await q.add('a', {});
    const job = (await worker.getNextJob('t1'))!;
    expect(await job.extendLock('t1', 60_000)).toBe(1);
    expect(await job.extendLock('other', 60_000)).toBe(0);
    await sleep(1200); // past the first lockDuration: only the extension keeps it
    expect(await q.client.pttl(q.keys.lock(job.id))).toBeGreaterThan(50_000);
    expect(await job.moveToWait('t1')).toBe(0);
    const again = (await worker.getNextJob('t2'))!;
    expect([again.id, again.attemptsMade]).toEqual([job.id, 0]);
  });

  it('a child finished by hand tells its parent at once', async () => {
    const [parents, children] = [uniqueQueueName('parents'), uniqueQueueName('children')];
    const tree = await producer().add({ name: 'p', queueName: parents, children: [{ name: 'c', queueName: children }] });
    const worker = manualWorker(children);
    const child = (await worker.getNextJob('t'))!;
    await child.moveToCompleted(42, 't');
    await eventually(async () => (await tree.job.getState()) === 'waiting', 2000, 'the parent ready');
    expect(await tree.job.getChildrenValues()).toEqual({ [`emq:{${children}}:${child.id}`]: 42 });
  });

  it('the stalled sweep, started by hand, gives back a job whose lock lapsed', async () => {
    const q = queue(uniqueQueueName('manual'));
    const worker = manualWorker(q.name, { lockDuration: 300, stalledInterval: 200 });
    worker.startStalledCheckTimer();
    await q.add('a', {});
    const job = (await worker.getNextJob('t1'))!;
    await eventually(async () => (await job.getState()) === 'waiting', 5000, 'given back');
    await expect(job.moveToCompleted('late', 't1')).rejects.toMatchObject({ code: -2 });
  });

  it('a job marked cancelled is failed as cancelled, not handed out; a parent failed by a child fails instead of completing', async () => {
    const q = queue(uniqueQueueName('manual'));
    const worker = manualWorker(q.name);
    const marked = await q.add('m', {});
    await q.client.hset(q.keys.job(marked.id), 'cxl', 'stop'); // as a job marked while active, given back by the sweep
    expect(await worker.getNextJob('t', { block: false })).toBeUndefined();
    expect((await q.getJob(marked.id))!.failedReason).toBe(`job ${marked.id} was cancelled: stop`);
    const parent = await q.add('p', {});
    const taken = (await worker.getNextJob('t2', { block: false }))!;
    expect(taken.id).toBe(parent.id);
    await q.client.hset(q.keys.job(parent.id), 'cfr', 'child emq:{c}:1 failed: broke'); // a child failed while it was held
    await taken.moveToCompleted('done', 't2');
    const read = (await q.getJob(parent.id))!;
    expect([await read.getState(), read.failedReason]).toEqual(['failed', 'child emq:{c}:1 failed: broke']);
  });
});
