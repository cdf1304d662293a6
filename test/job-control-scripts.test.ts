import { afterAll, describe, expect, it } from '@jest/globals';
import type { Cluster, Redis } from 'ioredis';
import { randomUUID as uuid } from 'node:crypto';
import { EchoMQError, Keys } from '../lib/index.js';
import { AdminScripts } from '../lib/protocol/admin-scripts.js';
import { JobControlScripts, Scripts } from '../lib/internal.js';
import { newClient, uniqueQueueName } from './support/redis.js';
import { newJob, pickup, snapshot } from './support/scripts.js';

// The job control scripts through their bindings, against a real Redis: what each writes, and that
// every refusal writes nothing.
const client = newClient();
afterAll(() => client.quit());

function queueFor(redis: Redis | Cluster = client) {
  const keys = new Keys(uniqueQueueName('jc'));
  return { keys, scripts: new Scripts(redis, keys, 1000), control: new JobControlScripts(redis, keys, 1000), admin: new AdminScripts(redis, keys, 1000) };
}

async function rejection(promise: Promise<unknown>): Promise<EchoMQError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(EchoMQError);
    return error as EchoMQError;
  }
  throw new Error('expected an EchoMQError');
}

/** The events of the queue's stream, as [name, jobId, ...fields]. */
async function events(keys: Keys): Promise<string[][]> {
  const entries = await client.xrange(keys.events, '-', '+');
  return entries.map(([, fields]) => fields.filter((_, i) => i % 2 === 1));
}

/** A refusal leaves every key of the queue as it was. */
async function refusedWithNothingWritten(keys: Keys, call: () => Promise<unknown>, code: number): Promise<EchoMQError> {
  const before = await snapshot(client, keys);
  const error = await rejection(call());
  expect(error.code).toBe(code);
  expect(await snapshot(client, keys)).toEqual(before);
  return error;
}

describe('updateData-1', () => {
  it('replaces the data in any state; -1 for a job that does not exist', async () => {
    const { keys, scripts, control } = queueFor();
    const { jobId } = await scripts.addJob(newJob({ data: '{"v":1}' }));
    await control.updateData(jobId, '{"v":2}');
    expect(await client.hget(keys.job(jobId), 'data')).toBe('{"v":2}');
    await refusedWithNothingWritten(keys, () => control.updateData('ghost', '{}'), -1);
  });
});

describe('changeDelay-4', () => {
  it('moves a delayed job to now + delay, stores the delay, sets the marker and emits delayed', async () => {
    const { keys, scripts, control } = queueFor();
    const { jobId } = await scripts.addJob(newJob({ delay: 60_000 }));
    const now = Date.now();
    await control.changeDelay(jobId, 500, now);
    expect(await client.zscore(keys.delayed, jobId)).toBe(String(now + 500));
    expect(await client.hget(keys.job(jobId), 'delay')).toBe('500');
    expect(await client.zscore(keys.marker, '1')).toBe(String(now + 500));
    expect((await events(keys)).at(-1)).toEqual(['delayed', jobId, String(now + 500)]);
  });

  it('-3 for a job that is not delayed and -1 for none, writing nothing', async () => {
    const { keys, scripts, control } = queueFor();
    const { jobId } = await scripts.addJob(newJob());
    const error = await refusedWithNothingWritten(keys, () => control.changeDelay(jobId, 1000, Date.now()), -3);
    expect(error.message).toContain('it is not delayed');
    await refusedWithNothingWritten(keys, () => control.changeDelay('ghost', 1000, Date.now()), -1);
  });
});

describe('promote-9', () => {
  it('makes a delayed job ready now with its priority, delay 0, marker, waiting (prev delayed)', async () => {
    const { keys, scripts, control } = queueFor();
    const plain = (await scripts.addJob(newJob({ delay: 60_000 }))).jobId;
    const urgent = (await scripts.addJob(newJob({ delay: 60_000, priority: 3 }))).jobId;
    await client.del(keys.marker);
    await control.promote(plain);
    await control.promote(urgent);
    expect(await client.lrange(keys.wait, '0', '-1')).toEqual([plain]);
    expect(await client.zrange(keys.prioritized, '0', '-1')).toEqual([urgent]);
    expect(await client.zcard(keys.delayed)).toBe(0);
    expect(await client.hget(keys.job(plain), 'delay')).toBe('0');
    expect(await client.zscore(keys.marker, '0')).toBe('0');
    expect((await events(keys)).slice(-2)).toEqual([['waiting', plain, 'delayed'], ['waiting', urgent, 'delayed']]);
  });

  it('on a paused queue the job goes to paused and no worker is woken', async () => {
    const { keys, scripts, control, admin } = queueFor();
    const { jobId } = await scripts.addJob(newJob({ delay: 60_000 }));
    await admin.pause('pause');
    await client.del(keys.marker);
    await control.promote(jobId);
    expect(await client.lrange(keys.paused, '0', '-1')).toEqual([jobId]);
    expect(await client.exists(keys.marker)).toBe(0);
  });

  it('-3 for a job that is not delayed and -1 for none, writing nothing', async () => {
    const { keys, scripts, control } = queueFor();
    const { jobId } = await scripts.addJob(newJob());
    await refusedWithNothingWritten(keys, () => control.promote(jobId), -3);
    await refusedWithNothingWritten(keys, () => control.promote('ghost'), -1);
  });
});

describe('changePriority-8', () => {
  it('moves a waiting job to prioritized and back, FIFO or LIFO, with the protocol score', async () => {
    const { keys, scripts, control } = queueFor();
    const [a, b, c] = [(await scripts.addJob(newJob())).jobId, (await scripts.addJob(newJob())).jobId, (await scripts.addJob(newJob())).jobId];
    await control.changePriority(b, 5, false);
    expect(await client.lrange(keys.wait, '0', '-1')).toEqual([c, a]);
    const score = Number(await client.zscore(keys.prioritized, b));
    expect(Math.floor(score / 2 ** 32)).toBe(5);
    expect(score % 2 ** 32).toBe(Number(await client.get(keys.pc)));
    expect(await client.hget(keys.job(b), 'priority')).toBe('5');
    // Back to no priority: FIFO goes to the end taken last, LIFO to the end taken next.
    await control.changePriority(b, 0, true);
    expect(await client.zcard(keys.prioritized)).toBe(0);
    expect(await client.lrange(keys.wait, '0', '-1')).toEqual([c, a, b]);
    await control.changePriority(b, 0, false);
    expect(await client.lrange(keys.wait, '0', '-1')).toEqual([b, c, a]);
  });

  it('a prioritized job changed to another priority goes behind the jobs already there', async () => {
    const { keys, scripts, control } = queueFor();
    const first = (await scripts.addJob(newJob({ priority: 1 }))).jobId;
    const second = (await scripts.addJob(newJob({ priority: 2 }))).jobId;
    await control.changePriority(first, 2, true); // lifo does not apply to a priority, as in add
    expect(await client.zrange(keys.prioritized, '0', '-1')).toEqual([second, first]);
  });

  it('a paused job stays paused (or prioritized); delayed and active jobs keep their place and get it later', async () => {
    const { keys, scripts, control, admin } = queueFor();
    const waiting = (await scripts.addJob(newJob())).jobId;
    const delayed = (await scripts.addJob(newJob({ delay: 60_000 }))).jobId;
    await admin.pause('pause');
    await control.changePriority(waiting, 4, false);
    expect(await client.zrange(keys.prioritized, '0', '-1')).toEqual([waiting]);
    await control.changePriority(waiting, 0, false);
    expect(await client.lrange(keys.paused, '0', '-1')).toEqual([waiting]);
    await control.changePriority(delayed, 7, false);
    expect(await client.zrange(keys.delayed, '0', '-1')).toEqual([delayed]);
    expect(await client.hget(keys.job(delayed), 'priority')).toBe('7');
    await admin.pause('resume');
    await control.promote(delayed);
    expect(await client.zrange(keys.prioritized, '0', '-1')).toEqual([delayed]); // the stored priority placed it

    const { keys: k2, scripts: s2, control: c2 } = queueFor();
    const running = (await s2.addJob(newJob())).jobId;
    await pickup(s2);
    await c2.changePriority(running, 3, false);
    expect(await client.lrange(k2.active, '0', '-1')).toEqual([running]);
    expect(await client.zcard(k2.prioritized)).toBe(0);
    expect(await client.hget(k2.job(running), 'priority')).toBe('3');
  });

  it('-1 for a job that does not exist, writing nothing', async () => {
    const { keys, scripts, control } = queueFor();
    await scripts.addJob(newJob());
    await refusedWithNothingWritten(keys, () => control.changePriority('ghost', 2, false), -1);
  });
});

describe('moveToDelayed-7', () => {
  it('sends an active job to delayed under its lock, releases the lock and counts no attempt', async () => {
    const { keys, scripts, control } = queueFor();
    const { jobId } = await scripts.addJob(newJob());
    const { token } = await pickup(scripts);
    await client.sadd(keys.stalled, jobId);
    const now = Date.now();
    await control.moveToDelayed(jobId, token, now + 5000, now);
    expect(await client.llen(keys.active)).toBe(0);
    expect(await client.zscore(keys.delayed, jobId)).toBe(String(now + 5000));
    expect(await client.exists(keys.lock(jobId))).toBe(0);
    expect(await client.sismember(keys.stalled, jobId)).toBe(0);
    expect(await client.hmget(keys.job(jobId), 'atm', 'ats', 'delay')).toEqual([null, '1', '5000']);
    expect(await client.zscore(keys.marker, '1')).toBe(String(now + 5000));
    expect((await events(keys)).at(-1)).toEqual(['delayed', jobId, String(now + 5000)]);
  });

  it('a due time already past is now: the next pickup takes the job again', async () => {
    const { keys, scripts, control } = queueFor();
    const { jobId } = await scripts.addJob(newJob());
    const { token } = await pickup(scripts);
    const now = Date.now();
    await control.moveToDelayed(jobId, token, now - 10_000, now);
    expect(await client.zscore(keys.delayed, jobId)).toBe(String(now));
    expect(await client.hget(keys.job(jobId), 'delay')).toBe('0');
    const again = await pickup(scripts);
    expect(again.pickup.job?.id).toBe(jobId);
  });

  it('refuses as retryJob-12 does, in its order: -1, -6, -2, -3, each writing nothing', async () => {
    const { keys, scripts, control } = queueFor();
    const { jobId } = await scripts.addJob(newJob());
    const { token } = await pickup(scripts);
    const move = (id: string, t: string) => control.moveToDelayed(id, t, Date.now() + 1000, Date.now());
    const retry = (id: string, t: string) => scripts.retryJob({ jobId: id, token: t, timestamp: Date.now(), delay: 0, failedReason: 'x', stacktrace: '[]' });
    const both = async (id: string, t: string, code: number) => {
      await refusedWithNothingWritten(keys, () => move(id, t), code);
      await refusedWithNothingWritten(keys, () => retry(id, t), code);
    };
    await both('ghost', token, -1);
    await both(jobId, uuid(), -6);
    await client.del(keys.lock(jobId));
    await both(jobId, token, -2);
    await client.set(keys.lock(jobId), token);
    await client.lrem(keys.active, 0, jobId);
    const error = await refusedWithNothingWritten(keys, () => move(jobId, token), -3);
    expect(error.message).toContain('it is not active');
  });
});

describe('retryJobs-8', () => {
  /** `n` jobs of `state` with finishedOn 1000, 2000, ... (their scores), atm 2, a returnvalue/failedReason and a stack. */
  async function finished(s: ReturnType<typeof queueFor>, state: 'failed' | 'completed', n: number, priority = 0): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 1; i <= n; i++) {
      const { jobId } = await s.scripts.addJob(newJob({ priority }));
      await client.lrem(s.keys.wait, 0, jobId);
      await client.zrem(s.keys.prioritized, jobId);
      await client.zadd(s.keys.state(state), i * 1000, jobId);
      await client.hset(s.keys.job(jobId), 'finishedOn', i * 1000, 'processedOn', i * 1000 - 1, 'atm', 2, 'ats', 2, 'stc', 1,
        'failedReason', 'boom', 'stacktrace', '["at x"]', 'returnvalue', '"r"');
      ids.push(jobId);
    }
    return ids;
  }

  it('moves at most count jobs a call, the first finished first, up to the cut-off, as job.retry() does one', async () => {
    const s = queueFor();
    const ids = await finished(s, 'failed', 5);
    await client.del(s.keys.marker);
    expect(await s.control.retryJobs('failed', 2, 4000)).toBe(2);
    expect(await client.lrange(s.keys.wait, '0', '-1')).toEqual([ids[1], ids[0]]);
    expect(await s.control.retryJobs('failed', 2, 4000)).toBe(2);
    expect(await s.control.retryJobs('failed', 2, 4000)).toBe(0); // the fifth finished after the cut-off
    expect(await client.zrange(s.keys.failed, '0', '-1')).toEqual([ids[4]]);
    expect(await client.hgetall(s.keys.job(ids[0]))).toEqual(expect.objectContaining({ atm: '0', stc: '0', ats: '2' }));
    for (const field of ['finishedOn', 'processedOn', 'failedReason', 'stacktrace', 'returnvalue']) {
      expect(await client.hexists(s.keys.job(ids[0]), field)).toBe(0);
    }
    expect(await client.zscore(s.keys.marker, '0')).toBe('0');
    expect((await events(s.keys)).slice(-4).map(([name, jobId, prev]) => [name, jobId, prev])).toEqual(
      ids.slice(0, 4).map((id) => ['waiting', id, 'retried']));
  });

  it('completed jobs too; a prioritized job keeps its priority; a paused queue gets them in paused, no marker', async () => {
    const s = queueFor();
    const [plain] = await finished(s, 'completed', 1);
    const [urgent] = await finished(s, 'completed', 1, 2);
    await s.admin.pause('pause');
    await client.del(s.keys.marker);
    expect(await s.control.retryJobs('completed', 1000, Date.now())).toBe(2);
    expect(await client.lrange(s.keys.paused, '0', '-1')).toEqual([plain]);
    expect(await client.zrange(s.keys.prioritized, '0', '-1')).toEqual([urgent]);
    expect(await client.exists(s.keys.marker)).toBe(0);
  });

  it('an id without a hash is only taken out of the set', async () => {
    const s = queueFor();
    await client.zadd(s.keys.failed, 1000, 'gone');
    expect(await s.control.retryJobs('failed', 1000, Date.now())).toBe(1);
    expect(await client.exists(s.keys.failed, s.keys.wait, s.keys.job('gone'))).toBe(0);
  });
});

describe('promoteJobs-8', () => {
  it('makes delayed jobs ready, the first due first, count a call, each as promote does', async () => {
    const { keys, scripts, control } = queueFor();
    const late = (await scripts.addJob(newJob({ delay: 90_000 }))).jobId;
    const soon = (await scripts.addJob(newJob({ delay: 30_000 }))).jobId;
    const urgent = (await scripts.addJob(newJob({ delay: 60_000, priority: 1 }))).jobId;
    await client.del(keys.marker);
    expect(await control.promoteJobs(2)).toBe(2);
    expect(await client.lrange(keys.wait, '0', '-1')).toEqual([soon]);
    expect(await client.zrange(keys.prioritized, '0', '-1')).toEqual([urgent]);
    expect(await control.promoteJobs(2)).toBe(1);
    expect(await client.lrange(keys.wait, '0', '-1')).toEqual([late, soon]);
    expect(await control.promoteJobs(2)).toBe(0);
    expect(await client.hget(keys.job(late), 'delay')).toBe('0');
    expect(await client.zscore(keys.marker, '0')).toBe('0');
    expect((await events(keys)).slice(-3)).toEqual([['waiting', soon, 'delayed'], ['waiting', urgent, 'delayed'], ['waiting', late, 'delayed']]);
  });
});
