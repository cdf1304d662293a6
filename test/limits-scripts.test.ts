import { afterAll, describe, expect, it } from '@jest/globals';
import { randomUUID as uuid } from 'node:crypto';
import { EchoMQError } from '../lib/index.js';
import { newClient } from './support/redis.js';
import { newJob, pickup, scriptsFor, snapshot } from './support/scripts.js';

// The scripts of the queue-wide limits, called directly (docs/protocol.md): finishJobsBounded-13
// and moveJobFromActiveToWait-11.
const client = newClient();
afterAll(() => client.quit());

function finish(jobId: string, token: string, nextToken?: string) {
  return {
    jobId, token, timestamp: Date.now(), outcome: 'completed' as const, value: '"ok"', stacktrace: '', keepCount: -1, keepAgeMs: 0,
    ...(nextToken ? { next: { token: nextToken, lockDuration: 20_000 } } : {}),
  };
}

/** `count` jobs added and picked up, each with its own token. */
async function activeJobs(s: ReturnType<typeof scriptsFor>, count: number) {
  const jobs: Array<{ jobId: string; token: string }> = [];
  for (let i = 0; i < count; i++) {
    const { jobId } = await s.scripts.addJob(newJob());
    const { pickup: taken, token } = await pickup(s.scripts);
    expect(taken.job?.id).toBe(jobId);
    jobs.push({ jobId, token });
  }
  return jobs;
}

describe('finishJobsBounded-13', () => {
  it('fetch-next leaves active at the bound, however many finishes asked (a bound lowered to below active)', async () => {
    const s = scriptsFor(client);
    const { keys, scripts } = s;
    const [a, b, c] = await activeJobs(s, 3);
    await scripts.addJobs([newJob(), newJob(), newJob()]); // ids 4, 5, 6
    await client.del(keys.marker);
    // Bound 2: after the finishes of a and b, c alone is active: room for one next job.
    const results = await scripts.finishJobs([finish(a.jobId, a.token, uuid()), finish(b.jobId, b.token, uuid())], Date.now(), 20_000, undefined, 2);
    expect(results.map((r) => ('job' in r ? r.job?.id : r))).toEqual(['4', undefined]);
    expect((await client.lrange(keys.active, '0', '-1')).sort()).toEqual([c.jobId, '4'].sort());
    // Active holds 2 (the bound): no room, so no marker either.
    expect(await client.exists(keys.marker)).toBe(0);
    // At the bound, one out and one in is fine: the finish of c takes 5.
    const [next] = await scripts.finishJobs([finish(c.jobId, c.token, uuid())], Date.now(), 20_000, undefined, 2);
    expect('job' in next && next.job?.id).toBe('5');
  });

  it('a slot left free with ready work behind it sets the marker; none when nothing waits, or while paused', async () => {
    const s = scriptsFor(client);
    const { keys, scripts } = s;
    const [a, b] = await activeJobs(s, 2);
    await scripts.addJob(newJob()); // id 3, ready
    await client.del(keys.marker);
    // No fetch-next asked (the worker was closing): active drops to 1 of 2 and a job waits.
    await scripts.finishJobs([finish(a.jobId, a.token)], Date.now(), 20_000, undefined, 2);
    expect(await client.zrange(keys.marker, '0', '-1', 'WITHSCORES')).toEqual(['0', '0']);

    await client.del(keys.marker);
    await client.hset(keys.meta, 'paused', '1');
    await scripts.finishJobs([finish(b.jobId, b.token)], Date.now(), 20_000, undefined, 2);
    expect(await client.exists(keys.marker)).toBe(0);
    await client.hdel(keys.meta, 'paused');

    await client.del(keys.wait);
    const [c] = await activeJobs(s, 1);
    await client.del(keys.marker);
    await scripts.finishJobs([finish(c.jobId, c.token)], Date.now(), 20_000, undefined, 2);
    expect(await client.exists(keys.marker)).toBe(0); // nothing ready: nobody to wake
  });

  it('without a bound the call is finishJobs-13 (the same results)', async () => {
    const s = scriptsFor(client);
    const [a] = await activeJobs(s, 1);
    await s.scripts.addJob(newJob());
    const [result] = await s.scripts.finishJobs([finish(a.jobId, a.token, uuid())], Date.now(), 20_000);
    expect('job' in result && result.job?.id).toBe('2');
  });
});

describe('moveJobFromActiveToWait-11', () => {
  it('gives the job back, next in line, with its attempt not counted', async () => {
    const s = scriptsFor(client);
    const { keys, scripts } = s;
    const [job] = await activeJobs(s, 1);
    await scripts.addJobs([newJob(), newJob()]); // 2 and 3 wait: 2 is next
    await client.sadd(keys.stalled, job.jobId);
    await client.del(keys.marker);
    await scripts.moveJobFromActiveToWait(job.jobId, job.token);
    expect(await client.lrange(keys.active, '0', '-1')).toEqual([]);
    expect(await client.lrange(keys.wait, '0', '-1')).toEqual(['3', '2', job.jobId]); // the right end is taken next
    expect(await client.exists(keys.lock(job.jobId))).toBe(0);
    expect(await client.smembers(keys.stalled)).toEqual([]);
    expect(await client.hmget(keys.job(job.jobId), 'atm', 'ats', 'failedReason')).toEqual([null, '1', null]);
    expect(await client.zrange(keys.marker, '0', '-1')).toEqual(['0']);
    const [, fields] = (await client.xrange(keys.events, '-', '+')).at(-1)!;
    expect(fields).toEqual(['event', 'waiting', 'jobId', job.jobId, 'prev', 'active']);
    const { pickup: again } = await pickup(scripts);
    expect(again.job?.id).toBe(job.jobId);
    expect(await client.hget(keys.job(job.jobId), 'ats')).toBe('2');
  });

  it('a prioritized job goes back to prioritized; a paused queue\'s to paused, with no marker', async () => {
    const s = scriptsFor(client);
    const { keys, scripts } = s;
    await scripts.addJob(newJob({ priority: 5 }));
    const { pickup: taken, token } = await pickup(scripts);
    await scripts.moveJobFromActiveToWait(taken.job!.id, token);
    expect(await client.zrange(keys.prioritized, '0', '-1')).toEqual([taken.job!.id]);

    const { pickup: again, token: second } = await pickup(scripts);
    await client.hdel(keys.job(again.job!.id), 'priority');
    await client.hset(keys.meta, 'paused', '1');
    await client.del(keys.marker);
    await scripts.moveJobFromActiveToWait(again.job!.id, second);
    expect(await client.lrange(keys.paused, '0', '-1')).toEqual([again.job!.id]);
    expect(await client.exists(keys.marker)).toBe(0);
  });

  it('checks the lock first: -1, -2, -6, -3, and changes nothing', async () => {
    const s = scriptsFor(client);
    const { keys, scripts } = s;
    const [job] = await activeJobs(s, 1);
    const before = await snapshot(client, keys);
    const code = (call: Promise<unknown>) => call.then(() => 0, (e: EchoMQError) => [e.code, e.script]);
    expect(await code(scripts.moveJobFromActiveToWait('nope', job.token))).toEqual([-1, 'moveJobFromActiveToWait-11.lua']);
    expect(await code(scripts.moveJobFromActiveToWait(job.jobId, uuid()))).toEqual([-6, 'moveJobFromActiveToWait-11.lua']);
    expect(await snapshot(client, keys)).toEqual(before);
    await client.lrem(keys.active, 0, job.jobId);
    expect(await code(scripts.moveJobFromActiveToWait(job.jobId, job.token))).toEqual([-3, 'moveJobFromActiveToWait-11.lua']);
    await client.del(keys.lock(job.jobId));
    expect(await code(scripts.moveJobFromActiveToWait(job.jobId, job.token))).toEqual([-2, 'moveJobFromActiveToWait-11.lua']);
  });
});
