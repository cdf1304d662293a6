import { describe, expect, it } from '@jest/globals';
import { Job, QueueEvents, type JobsOptions } from '../lib/index.js';
import { testConnection, uniqueQueueName } from './support/redis.js';
import { closers, producer, queue } from './support/test-resources.js';

// BullMQ's names with BullMQ's behaviour (issue 38), in our words: the statics of Job, the state
// names job.getState() answers and the predicates on them, waitUntilReady.

describe('Job.create, Job.createBulk, Job.fromId', () => {
  it('add, add many and read back through the queue given, as queue.add, addBulk and getJob do', async () => {
    const q = queue(uniqueQueueName('shapes'));
    const opts: JobsOptions = { priority: 2 };
    const created = await Job.create(q, 'one', { n: 1 }, opts);
    expect(await created.getState()).toBe('prioritized');
    const many = await Job.createBulk(q, [{ name: 'two', data: { n: 2 } }, { name: 'three', data: { n: 3 }, opts: { delay: 60_000 } }]);
    expect(many.map((job) => job.name)).toEqual(['two', 'three']);
    const read = await Job.fromId(q, created.id);
    expect(read).toMatchObject({ id: created.id, name: 'one', data: { n: 1 }, priority: 2 });
    expect(await Job.fromId(q, 'no-such-job')).toBeUndefined();
  });
});

describe('job.getState() answers BullMQ\'s names', () => {
  it('waiting for a job in wait and in paused, then prioritized, delayed; the predicates agree', async () => {
    const q = queue(uniqueQueueName('shapes'));
    const waiting = await q.add('w', {});
    const prioritized = await q.add('p', {}, { priority: 1 });
    const delayed = await q.add('d', {}, { delay: 60_000 });
    expect(await waiting.getState()).toBe('waiting');
    expect(await prioritized.getState()).toBe('prioritized');
    expect(await delayed.getState()).toBe('delayed');
    await q.pause();
    const paused = await q.add('q', {});
    expect(await paused.getState()).toBe('waiting');
    expect(await q.getJobCounts('paused', 'waiting')).toEqual({ paused: 2, waiting: 0 });
    expect([await waiting.isWaiting(), await prioritized.isWaiting(), await delayed.isDelayed(), await paused.isWaiting()]).toEqual([true, false, true, true]);
    expect([await waiting.isActive(), await waiting.isCompleted(), await waiting.isFailed(), await waiting.isWaitingChildren()]).toEqual([false, false, false, false]);
  });

  it('waiting-children for a parent; completed and failed once finished, unknown once gone', async () => {
    const [parents, children] = [uniqueQueueName('parents'), uniqueQueueName('children')];
    const tree = await producer().add({ name: 'p', queueName: parents, children: [{ name: 'c', queueName: children }] });
    expect(await tree.job.getState()).toBe('waiting-children');
    expect(await tree.job.isWaitingChildren()).toBe(true);
    const childQueue = queue(children);
    expect(await childQueue.cancelJob(tree.children![0].job.id)).toBe(true);
    expect(await tree.children![0].job.isFailed()).toBe(true);
    await tree.children![0].job.remove();
    expect(await tree.children![0].job.getState()).toBe('unknown');
  });
});

describe('waitUntilReady', () => {
  it('Queue and FlowProducer resolve once their connection answers', async () => {
    const q = queue(uniqueQueueName('shapes'));
    await expect(q.waitUntilReady()).resolves.toBeUndefined();
    await expect(producer().waitUntilReady()).resolves.toBeUndefined();
  });
});

describe('a Queue is an EventEmitter of what it did (BullMQ\'s QueueListener)', () => {
  it('waiting after add, paused, resumed, progress, removed, cleaned', async () => {
    const q = queue(uniqueQueueName('shapes'));
    const seen: unknown[][] = [];
    for (const event of ['waiting', 'paused', 'resumed', 'progress', 'removed', 'cleaned'] as const) {
      q.on(event, (...args: unknown[]) => seen.push([event, ...args.map((arg) => (arg instanceof Job ? `job ${arg.id}` : arg))]));
    }
    const job = await q.add('a', {});
    await q.pause();
    await q.resume();
    await q.updateJobProgress(job.id, { pct: 50 });
    expect((await q.getJob(job.id))!.progress).toEqual({ pct: 50 });
    expect(await q.remove(job.id)).toBe(1);
    const old = await q.add('b', {});
    expect(await q.clean(0, 0, 'wait')).toEqual([old.id]);
    expect(seen).toEqual([
      ['waiting', `job ${job.id}`], ['paused'], ['resumed'], ['progress', job.id, { pct: 50 }], ['removed', job.id],
      ['waiting', `job ${old.id}`], ['cleaned', [old.id], 'wait'],
    ]);
  });
});

describe('queue.addJobLog, updateJobProgress, getJobState', () => {
  it('act on a job by its id; a job that does not exist: EchoMQError -1, or unknown', async () => {
    const q = queue(uniqueQueueName('shapes'));
    const job = await q.add('a', {}, { delay: 60_000 });
    expect(await q.addJobLog(job.id, 'one')).toBe(1);
    expect(await q.addJobLog(job.id, 'two', 1)).toBe(1);
    expect(await q.getJobLogs(job.id)).toEqual({ logs: ['two'], count: 1 });
    expect(await q.getJobState(job.id)).toBe('delayed');
    expect(await q.getJobState('nope')).toBe('unknown');
    await expect(q.updateJobProgress('nope', 1)).rejects.toMatchObject({ code: -1 });
    await expect(q.addJobLog('nope', 'x')).rejects.toMatchObject({ code: -1 });
  });
});

describe('job.clearLogs', () => {
  it('deletes the log, or keeps its newest lines', async () => {
    const q = queue(uniqueQueueName('shapes'));
    const job = await q.add('a', {}, { delay: 60_000 });
    for (const line of ['one', 'two', 'three']) await job.log(line);
    await job.clearLogs(2);
    expect(await job.getLogs()).toEqual(['two', 'three']);
    await job.clearLogs();
    expect(await job.getLogs()).toEqual([]);
    await expect(job.clearLogs(-1)).rejects.toMatchObject({ field: 'keepLogs' });
  });
});

describe('queue.rateLimit and getRateLimitTtl', () => {
  it('limits every worker from outside one; the ttl counts down, and is 0 for a max the window has not reached', async () => {
    const q = queue(uniqueQueueName('shapes'));
    expect(await q.getRateLimitTtl()).toBe(-2); // no limiter key
    await q.rateLimit(5000);
    const ttl = await q.getRateLimitTtl();
    expect(ttl).toBeGreaterThan(4000);
    expect(ttl).toBeLessThanOrEqual(5000);
    expect(await q.getRateLimitTtl(1)).toBeGreaterThan(4000); // the manual limit counts as a full window
    await expect(q.rateLimit(0)).rejects.toMatchObject({ field: 'expireTimeMs' });
    await expect(q.getRateLimitTtl(0)).rejects.toMatchObject({ field: 'maxJobs' });
  });
});

describe('queue.getMeta and the global limits\' reads', () => {
  it('answers paused and the limits set; null for a limit not set, as BullMQ', async () => {
    const q = queue(uniqueQueueName('shapes'));
    expect(await q.getMeta()).toEqual({ paused: false });
    expect([await q.getGlobalConcurrency(), await q.getGlobalRateLimit()]).toEqual([null, null]);
    await q.setGlobalConcurrency(4);
    await q.setGlobalRateLimit(10, 1000);
    await q.pause();
    expect(await q.getMeta()).toEqual({ paused: true, concurrency: 4, max: 10, duration: 1000 });
  });
});

describe('QueueEvents.run', () => {
  it('starts one made with autorun false; on a running one it rejects, as BullMQ\'s, while waitUntilReady resolves', async () => {
    const events = new QueueEvents(uniqueQueueName('shapes'), { connection: testConnection(), autorun: false });
    closers.push(() => events.close());
    await events.run();
    await expect(events.run()).rejects.toThrow(/already running/);
    await expect(events.waitUntilReady()).resolves.toBeUndefined();
  });
});

describe('queue.toKey', () => {
  it('names the queue\'s keys by their last part, as BullMQ\'s: a job\'s hash, the events stream', async () => {
    const q = queue(uniqueQueueName('shapes'));
    const job = await q.add('a', {});
    expect(q.toKey(job.id)).toBe(q.keys.job(job.id));
    expect(q.toKey('events')).toBe(q.keys.events);
    expect(await q.client.hget(q.toKey(job.id), 'name')).toBe('a');
  });
});

describe('queue.removeOrphanedJobs', () => {
  it('deletes the job hashes no state holds, with their logs; jobs in every state, schedulers and deduplication keys stay', async () => {
    const q = queue(uniqueQueueName('shapes'));
    const waiting = await q.add('w', {}, { deduplication: { id: 'd' } });
    const delayed = await q.add('d', {}, { delay: 60_000 });
    const prioritized = await q.add('p', {}, { priority: 2 });
    await q.upsertJobScheduler('tick', { every: 60_000 });
    for (const id of ['orphan-1', 'orphan-2']) {
      await q.client.hset(q.toKey(id), 'name', 'x', 'data', '{}', 'opts', '{}', 'timestamp', Date.now());
      await q.client.rpush(`${q.toKey(id)}:logs`, 'a line');
    }
    expect(await q.removeOrphanedJobs(1000, 1)).toBe(1); // the limit
    expect(await q.removeOrphanedJobs()).toBe(1);
    expect(await q.removeOrphanedJobs()).toBe(0);
    expect(await q.client.exists(q.toKey('orphan-1'), q.toKey('orphan-2'), `${q.toKey('orphan-1')}:logs`)).toBe(0);
    for (const job of [waiting, delayed, prioritized]) expect(await q.getJob(job.id)).toBeDefined();
    expect(await q.getJobSchedulersCount()).toBe(1);
    expect(await q.getDeduplicationJobId('d')).toBe(waiting.id);
    await q.client.set(q.toKey('not-a-hash'), 'x'); // a key of another type under the queue's prefix: judged, not a WRONGTYPE
    expect(await q.removeOrphanedJobs()).toBe(0);
    await expect(q.removeOrphanedJobs(0)).rejects.toMatchObject({ field: 'count' });
  });
});

describe('the job option sizeLimit', () => {
  it('refuses an add whose data is over it, naming the field; under it, the job is added with it in its opts', async () => {
    const q = queue(uniqueQueueName('shapes'));
    const job = await q.add('a', { s: 'abc' }, { sizeLimit: 20 });
    expect(job.opts.sizeLimit).toBe(20);
    await expect(q.add('a', { s: 'x'.repeat(30) }, { sizeLimit: 20 })).rejects.toMatchObject({ field: 'add: data' });
    await expect(q.add('a', {}, { sizeLimit: 0 })).rejects.toMatchObject({ field: 'add: opts.sizeLimit' });
    expect(await q.count()).toBe(1);
  });
});
