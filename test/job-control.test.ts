import { afterAll, afterEach, describe, expect, it } from '@jest/globals';
import { randomUUID as uuid } from 'node:crypto';
import { EchoMQError, EchoMQOptionError, Queue, type Job } from '../lib/index.js';
import { Scripts } from '../lib/internal.js';
import { partitionOf } from '../lib/protocol/partitions.js';
import { newClient, sleep, testConnection, uniqueQueueName } from './support/redis.js';
import { snapshot } from './support/scripts.js';

// Job control through the Queue and Job API (docs/job-control.md), on a plain and a partitioned
// queue: each method, and each refusal with its typed error and nothing written. The worker's
// side (moveToDelayed, DelayedError, discard, wake-ups) is in job-control-worker.test.ts.
const client = newClient();
const open: Queue[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map(async (queue) => {
    await queue.obliterate({ force: true });
    await queue.close();
  }));
});
afterAll(() => client.quit());

const PARTITIONS = 3;
const kinds = [['a plain queue', 1], ['a partitioned queue', PARTITIONS]] as const;

function newQueue(partitions = 1, opts = {}): Queue {
  const queue = new Queue(uniqueQueueName('jc'), { connection: testConnection(), partitions: partitions === 1 ? undefined : partitions, ...opts });
  open.push(queue);
  return queue;
}

/** Every key of every partition, to prove a refusal wrote nothing. */
async function everything(queue: Queue): Promise<Record<string, unknown>> {
  const parts = await Promise.all(queue.partitionKeys.map((keys) => snapshot(client, keys)));
  return Object.assign({}, ...parts);
}

/** The call is refused with `type` (and, for an EchoMQOptionError, that field; for an EchoMQError, that code), writing nothing. */
async function refused(queue: Queue, call: () => Promise<unknown>, expected: { field: string } | { code: number }): Promise<Error> {
  const before = await everything(queue);
  let caught: unknown;
  try {
    await call();
  } catch (error) {
    caught = error;
  }
  if ('field' in expected) {
    expect(caught).toBeInstanceOf(EchoMQOptionError);
    expect((caught as EchoMQOptionError).field).toBe(expected.field);
  } else {
    expect(caught).toBeInstanceOf(EchoMQError);
    expect((caught as EchoMQError).code).toBe(expected.code);
  }
  expect(await everything(queue)).toEqual(before);
  return caught as Error;
}

/** Takes every ready job of every partition and finishes it as `outcome` at `finishedOn`. */
async function finishAll(queue: Queue, outcome: 'completed' | 'failed', finishedOn = Date.now()): Promise<string[]> {
  const ids: string[] = [];
  for (const keys of queue.partitionKeys) {
    const scripts = new Scripts(client, keys, 1000);
    for (;;) {
      const token = uuid();
      const { job } = await scripts.moveToActive(token, 30_000, Date.now());
      if (!job) break;
      await scripts.moveToFinished({ jobId: job.id, token, timestamp: finishedOn, outcome, value: outcome === 'failed' ? 'boom' : '"ok"',
        stacktrace: '[]', keepCount: -1, keepAgeMs: 0 });
      ids.push(job.id);
    }
  }
  return ids;
}

describe.each(kinds)('job control on %s', (_kind, partitions) => {
  it('updateData replaces the data (getJob reads it back); bad data and a gone job are refused, nothing written', async () => {
    const queue = newQueue(partitions, { maxDataSize: 64 });
    const job = await queue.add('a', { step: 1 }, { jobId: 'order-7' });
    await job.updateData({ step: 2 });
    expect(job.data).toEqual({ step: 2 });
    expect((await queue.getJob('order-7'))!.data).toEqual({ step: 2 });
    await refused(queue, () => job.updateData({ f: () => 1 }), { field: 'data.f' });
    await refused(queue, () => job.updateData({ big: 'x'.repeat(100) }), { field: 'data' });
    await job.remove();
    await refused(queue, () => job.updateData({ step: 3 }), { code: -1 });
  });

  it('changeDelay makes a delayed job due delay ms from now; refused for a job not delayed and for bad delays', async () => {
    const queue = newQueue(partitions);
    const job = await queue.add('later', {}, { delay: 60_000 });
    const before = Date.now();
    await job.changeDelay(5000);
    expect(job.delay).toBe(5000);
    const [stored] = await queue.getJobs('delayed');
    expect(stored.delay).toBe(5000);
    const keys = queue.partitionKeys.find((k) => k.base.includes(`#${job.id.split('-')[0]}}`)) ?? queue.partitionKeys[0];
    const due = Number(await client.zscore(keys.delayed, job.id));
    expect(due).toBeGreaterThanOrEqual(before + 5000);
    expect(due).toBeLessThanOrEqual(Date.now() + 5000);
    for (const bad of [-1, 1.5, '100', Number.MAX_SAFE_INTEGER, undefined]) {
      await refused(queue, () => job.changeDelay(bad as number), { field: 'delay' });
    }
    const ready = await queue.add('now', {});
    const error = await refused(queue, () => ready.changeDelay(1000), { code: -3 });
    expect(error.message).toContain('not delayed');
  });

  it('changePriority moves a waiting job to prioritized and back; refuses bad priorities and lifo, a gone job', async () => {
    const queue = newQueue(partitions);
    const job = await queue.add('p', {}, { partitionKey: 'k' });
    await job.changePriority({ priority: 3 });
    expect(job.priority).toBe(3);
    expect(await job.getState()).toBe('prioritized');
    expect((await queue.getJob(job.id))!.priority).toBe(3);
    expect(await queue.getCountsPerPriority([3])).toEqual({ 3: 1 });
    await job.changePriority({ lifo: true });
    expect(await job.getState()).toBe('waiting');
    expect(job.priority).toBe(0);
    for (const [change, field] of [
      [{ priority: -1 }, 'priority'], [{ priority: 2 ** 21 }, 'priority'], [{ priority: 1.5 }, 'priority'], [{ priority: '2' }, 'priority'],
      [{ lifo: 'yes' }, 'lifo'], [null, 'changePriority'], [3, 'changePriority'],
    ] as const) {
      await refused(queue, () => job.changePriority(change as never), { field });
    }
    await job.remove();
    await refused(queue, () => job.changePriority({ priority: 1 }), { code: -1 });
  });

  it('promote makes a delayed job ready now; refused for a job not delayed', async () => {
    const queue = newQueue(partitions);
    const job = await queue.add('later', {}, { delay: 60_000, priority: 2 });
    await job.promote();
    expect(job.delay).toBe(0);
    expect(await job.getState()).toBe('prioritized');
    await refused(queue, () => job.promote(), { code: -3 });
  });

  it('moveToDelayed outside a run: no lock (-2); bad timestamp and token refused by field', async () => {
    const queue = newQueue(partitions);
    const job = await queue.add('a', {});
    await refused(queue, () => job.moveToDelayed(Date.now() + 1000, uuid()), { code: -2 });
    await refused(queue, () => job.moveToDelayed(-5, 'token'), { field: 'timestamp' });
    await refused(queue, () => job.moveToDelayed(Number.NaN, 'token'), { field: 'timestamp' });
    await refused(queue, () => job.moveToDelayed(Date.now(), ''), { field: 'token' });
    await refused(queue, () => job.moveToDelayed(Date.now(), undefined as never), { field: 'token' });
  });

  it('retryJobs sends failed (or completed) jobs back to wait in batches of count, up to the cut-off', async () => {
    const queue = newQueue(partitions);
    await queue.addBulk(Array.from({ length: 7 }, (_, i) => ({ name: 'early', data: i })));
    const early = await finishAll(queue, 'failed', 1_000_000);
    await queue.addBulk(Array.from({ length: 3 }, (_, i) => ({ name: 'late', data: i })));
    await finishAll(queue, 'failed', 3_000_000);
    await queue.addBulk([{ name: 'done', data: 0 }]);
    await finishAll(queue, 'completed');
    await queue.retryJobs({ count: 2, timestamp: 2_000_000 });
    expect((await queue.getJobs('wait')).map((j) => j.id).sort()).toEqual([...early].sort());
    expect(await queue.getJobCounts('failed', 'completed')).toEqual({ failed: 3, completed: 1 });
    const retried = (await queue.getJob(early[0]))!;
    expect([retried.attemptsMade, retried.failedReason, retried.finishedOn]).toEqual([0, undefined, undefined]);
    await queue.retryJobs();
    await queue.retryJobs({ state: 'completed' });
    expect(await queue.getJobCounts('wait', 'failed', 'completed')).toEqual({ wait: 11, failed: 0, completed: 0 });
  });

  it('retryJobs and promoteJobs refuse bad options, naming the field, with nothing written', async () => {
    const queue = newQueue(partitions);
    await queue.add('d', {}, { delay: 60_000 });
    await queue.add('f', {});
    await finishAll(queue, 'failed');
    await refused(queue, () => queue.retryJobs({ state: 'active' as never }), { field: 'state' });
    for (const count of [0, -1, 1.5, 10_001, '5']) {
      await refused(queue, () => queue.retryJobs({ count: count as number }), { field: 'count' });
      await refused(queue, () => queue.promoteJobs({ count: count as number }), { field: 'count' });
    }
    await refused(queue, () => queue.retryJobs({ timestamp: -1 }), { field: 'timestamp' });
    await refused(queue, () => queue.retryJobs({ timestamp: 'now' as never }), { field: 'timestamp' });
    await refused(queue, () => queue.retryJobs(null as never), { field: 'retryJobs options' });
    await refused(queue, () => queue.promoteJobs([] as never), { field: 'promoteJobs options' });
  });

  it('promoteJobs makes every delayed job ready, in batches of count', async () => {
    const queue = newQueue(partitions);
    await queue.addBulk(Array.from({ length: 9 }, (_, i) => ({ name: 'd', data: i, opts: { delay: 60_000 + i } })));
    await queue.add('p', {}, { delay: 60_000, priority: 4 });
    await queue.promoteJobs({ count: 2 });
    expect(await queue.getJobCounts('delayed', 'wait', 'prioritized')).toEqual({ delayed: 0, wait: 9, prioritized: 1 });
    expect((await queue.getJobs('wait')).every((job) => job.delay === 0)).toBe(true);
  });

  it('count is waiting + paused + prioritized + delayed; getCountsPerPriority counts each priority once', async () => {
    const queue = newQueue(partitions);
    await queue.add('finished', {});
    await finishAll(queue, 'completed');
    await queue.addBulk([
      { name: 'w', data: 0 }, { name: 'w', data: 1 },
      { name: 'p1', data: 0, opts: { priority: 1 } },
      { name: 'p2', data: 0, opts: { priority: 2 } }, { name: 'p2', data: 1, opts: { priority: 2 } },
      { name: 'top', data: 0, opts: { priority: 2 ** 21 - 1 } },
      { name: 'd', data: 0, opts: { delay: 60_000 } },
    ]);
    expect(await queue.count()).toBe(7);
    await queue.pause();
    await queue.add('w', {});
    expect(await queue.count()).toBe(8);
    expect(await queue.getCountsPerPriority([0, 1, 2, 2, 3, 2 ** 21 - 1])).toEqual({ 0: 3, 1: 1, 2: 2, 3: 0, [2 ** 21 - 1]: 1 });
    expect(await queue.getCountsPerPriority([])).toEqual({});
    for (const [priorities, field] of [[[1, -1], 'priorities[1]'], [[2 ** 21], 'priorities[0]'], [['1'], 'priorities[0]'], [3, 'priorities']] as const) {
      await expect(queue.getCountsPerPriority(priorities as never)).rejects.toMatchObject({ name: 'EchoMQOptionError', field });
    }
  });

  it('getJobLogs answers { logs, count }, oldest first or newest first, start to end', async () => {
    const queue = newQueue(partitions);
    // A custom id with a partitionKey may be in any partition: the lookup finds it there.
    const job = await queue.add('logged', {}, { jobId: 'with-logs', partitionKey: 'elsewhere' });
    for (const line of ['one', 'two', 'three', 'four']) await job.log(line);
    expect(await queue.getJobLogs('with-logs')).toEqual({ logs: ['one', 'two', 'three', 'four'], count: 4 });
    expect(await queue.getJobLogs('with-logs', 1, 2)).toEqual({ logs: ['two', 'three'], count: 4 });
    expect(await queue.getJobLogs('with-logs', 0, -1, false)).toEqual({ logs: ['four', 'three', 'two', 'one'], count: 4 });
    expect(await queue.getJobLogs('with-logs', 0, 1, false)).toEqual({ logs: ['four', 'three'], count: 4 });
    expect(await queue.getJobLogs('with-logs', -2, -1, false)).toEqual({ logs: ['two', 'one'], count: 4 });
    expect(await queue.getJobLogs('missing')).toEqual({ logs: [], count: 0 });
    expect(await queue.getJobLogs('wait')).toEqual({ logs: [], count: 0 }); // not a job's id: no key read
    await expect(queue.getJobLogs(5 as never)).rejects.toMatchObject({ name: 'EchoMQOptionError', field: 'jobId' });
    await expect(queue.getJobLogs('with-logs', 0.5)).rejects.toMatchObject({ name: 'EchoMQOptionError', field: 'start' });
    await expect(queue.getJobLogs('with-logs', 0, 'x' as never)).rejects.toMatchObject({ name: 'EchoMQOptionError', field: 'end' });
    await expect(queue.getJobLogs('with-logs', 0, -1, 1 as never)).rejects.toMatchObject({ name: 'EchoMQOptionError', field: 'asc' });
  });

  it('getJobs takes asc: true oldest (next to run) first, false newest first, left out the default order', async () => {
    const queue = newQueue(partitions);
    const names = (jobs: Job[]) => jobs.map((j) => j.name);
    for (const name of ['w1', 'w2', 'w3']) {
      await queue.add(name, {});
      await sleep(2); // distinct add times: across partitions, wait is ordered by them
    }
    for (const [name, delay] of [['d-late', 90_000], ['d-soon', 30_000], ['d-mid', 60_000]] as const) await queue.add(name, {}, { delay });
    expect(names(await queue.getJobs('wait'))).toEqual(['w1', 'w2', 'w3']);
    expect(names(await queue.getJobs('wait', 0, -1, true))).toEqual(['w1', 'w2', 'w3']);
    expect(names(await queue.getJobs('wait', 0, -1, false))).toEqual(['w3', 'w2', 'w1']);
    expect(names(await queue.getJobs('wait', 0, 1, false))).toEqual(['w3', 'w2']);
    expect(names(await queue.getJobs('delayed'))).toEqual(['d-soon', 'd-mid', 'd-late']);
    expect(names(await queue.getJobs('delayed', 0, -1, false))).toEqual(['d-late', 'd-mid', 'd-soon']);
    // The due time, not the add time plus the delay, orders delayed jobs (across partitions too):
    // d-late, added before d-soon, now falls due a little after it.
    const late = (await queue.getJobs('delayed', 2, 2))[0];
    await sleep(60);
    await late.changeDelay(29_980);
    expect(names(await queue.getJobs('delayed'))).toEqual(['d-soon', 'd-late', 'd-mid']);
    expect(names(await queue.getJobs('delayed', 0, 0, false))).toEqual(['d-mid']);
    await finishAll(queue, 'completed', 1000);
    await sleep(2);
    await queue.add('c-new', {});
    await finishAll(queue, 'completed', 2000);
    expect(names(await queue.getJobs('completed', 0, 0))).toEqual(['c-new']);
    expect(names(await queue.getJobs('completed', 0, 0, false))).toEqual(['c-new']);
    expect(names(await queue.getJobs('completed', 0, 0, true))).not.toEqual(['c-new']);
    expect(names(await queue.getJobs('completed', -1, -1, true))).toEqual(['c-new']);
    await expect(queue.getJobs('wait', 0, -1, 'yes' as never)).rejects.toMatchObject({ name: 'EchoMQOptionError', field: 'asc' });
  });
});

describe('job control of a job scheduler\'s jobs', () => {
  it('promote and changeDelay take a scheduler\'s delayed job like any other', async () => {
    const queue = newQueue(PARTITIONS);
    const first = (await queue.upsertJobScheduler('hourly', { every: 3_600_000 }))!;
    expect(first.id).toMatch(/^repeat:hourly:\d+$/);
    const keys = queue.partitionKeys[partitionOf('hourly', PARTITIONS)];
    await first.changeDelay(10_000);
    expect(Number(await client.zscore(keys.delayed, first.id))).toBeLessThanOrEqual(Date.now() + 10_000);
    await first.promote();
    expect(await first.getState()).toBe('waiting');
    expect((await queue.getJobScheduler('hourly'))!.next).toBe(Number(first.id.split(':')[2]));
  });
});
