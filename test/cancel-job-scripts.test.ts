import { afterAll, describe, expect, it } from '@jest/globals';
import { Keys } from '../lib/index.js';
import { AdminScripts } from '../lib/protocol/admin-scripts.js';
import { JobControlScripts, runPipelined, Scripts } from '../lib/internal.js';
import { parseCancelled } from '../lib/protocol/script-replies.js';
import { newClient, uniqueQueueName } from './support/redis.js';
import { newJob, pickup, snapshot } from './support/scripts.js';

// cancelJob-12 and cancelledAmong-1 (docs/protocol.md, "Cancelling jobs") through their bindings,
// against a real Redis: what each outcome writes, and that the answers that change nothing write
// nothing. The worker's and the Queue's side are in test/cancel-job.test.ts.
const client = newClient();
afterAll(() => client.quit());

function queueFor() {
  const keys = new Keys(uniqueQueueName('cxl'));
  return { keys, scripts: new Scripts(client, keys, 1000), control: new JobControlScripts(client, keys, 1000), admin: new AdminScripts(client, keys, 1000) };
}

/** The events of the queue's stream, as [name, jobId, ...field values]. */
async function events(keys: Keys): Promise<string[][]> {
  const entries = await client.xrange(keys.events, '-', '+');
  return entries.map(([, fields]) => fields.filter((_, i) => i % 2 === 1));
}

const KEEP_ALL: [number, number] = [-1, 0];

describe('cancelJob-12', () => {
  it('a waiting job fails at once: out of wait, in failed, finishedOn, failedReason, cxl, event failed; atm untouched', async () => {
    const { keys, scripts, control } = queueFor();
    const other = (await scripts.addJob(newJob())).jobId;
    const { jobId } = await scripts.addJob(newJob());
    await client.hset(keys.job(jobId), 'atm', '1', 'stacktrace', '["an earlier attempt"]');
    const now = Date.now();
    expect(await control.cancelJob(jobId, 'the user asked', now, ...KEEP_ALL)).toBe('failed');
    expect(await client.lrange(keys.wait, 0, -1)).toEqual([other]);
    expect(await client.zrange(keys.failed, '0', '-1', 'WITHSCORES')).toEqual([jobId, String(now)]);
    expect(await client.hmget(keys.job(jobId), 'finishedOn', 'failedReason', 'cxl', 'atm', 'stacktrace')).toEqual([
      String(now), `job ${jobId} was cancelled: the user asked`, 'the user asked', '1', '["an earlier attempt"]',
    ]);
    expect((await events(keys)).at(-1)).toEqual(['failed', jobId, `job ${jobId} was cancelled: the user asked`]);
    // Finished now: a second cancel is 'finished' and writes nothing.
    const before = await snapshot(client, keys);
    expect(await control.cancelJob(jobId, 'again', Date.now(), ...KEEP_ALL)).toBe('finished');
    expect(await snapshot(client, keys)).toEqual(before);
  });

  it('without a reason: failedReason "job <id> was cancelled" and cxl ""', async () => {
    const { keys, scripts, control } = queueFor();
    const { jobId } = await scripts.addJob(newJob());
    expect(await control.cancelJob(jobId, '', Date.now(), ...KEEP_ALL)).toBe('failed');
    expect(await client.hmget(keys.job(jobId), 'failedReason', 'cxl')).toEqual([`job ${jobId} was cancelled`, '']);
  });

  it('a delayed, a prioritized and a paused job fail at once, each taken out of its state', async () => {
    const { keys, scripts, control, admin } = queueFor();
    const delayed = (await scripts.addJob(newJob({ delay: 60_000 }))).jobId;
    const prioritized = (await scripts.addJob(newJob({ priority: 3 }))).jobId;
    const kept = (await scripts.addJob(newJob({ priority: 3 }))).jobId;
    for (const id of [delayed, prioritized]) expect(await control.cancelJob(id, 'no', Date.now(), ...KEEP_ALL)).toBe('failed');
    expect(await client.zcard(keys.delayed)).toBe(0);
    expect(await client.zrange(keys.prioritized, '0', '-1')).toEqual([kept]);
    await admin.pause('pause');
    const paused = (await scripts.addJob(newJob())).jobId;
    expect(await client.lrange(keys.paused, 0, -1)).toEqual([paused]);
    expect(await control.cancelJob(paused, 'no', Date.now(), ...KEEP_ALL)).toBe('failed');
    expect(await client.llen(keys.paused)).toBe(0);
    expect((await client.zrange(keys.failed, '0', '-1')).sort()).toEqual([delayed, prioritized, paused].sort());
  });

  it('the keep rule: 0 removes the job with its logs; a count trims the oldest failed jobs', async () => {
    const { keys, scripts, control } = queueFor();
    const removed = (await scripts.addJob(newJob())).jobId;
    await client.rpush(keys.logs(removed), 'a line');
    expect(await control.cancelJob(removed, '', Date.now(), 0, 0)).toBe('failed');
    expect(await client.exists(keys.job(removed), keys.logs(removed))).toBe(0);
    expect(await client.zcard(keys.failed)).toBe(0);
    expect((await events(keys)).at(-1)).toEqual(['failed', removed, `job ${removed} was cancelled`]);

    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await scripts.addJob(newJob())).jobId);
    for (const [i, id] of ids.entries()) expect(await control.cancelJob(id, '', 1_000 + i, 2, 0)).toBe('failed');
    expect(await client.zrange(keys.failed, '0', '-1')).toEqual(ids.slice(1));
    expect(await client.exists(keys.job(ids[0]))).toBe(0);
  });

  it('a running job (its lock exists) is marked for its worker: cxl and the cancels counter, nothing else', async () => {
    const { keys, scripts, control } = queueFor();
    const { jobId } = await scripts.addJob(newJob());
    await pickup(scripts);
    const before = await snapshot(client, keys);
    expect(await control.cancelJob(jobId, 'stop it', Date.now(), ...KEEP_ALL)).toBe('marked');
    const after = await snapshot(client, keys);
    expect(after[keys.job(jobId)]).toEqual({ ...(before[keys.job(jobId)] as object), cxl: 'stop it' });
    expect(after[keys.meta]).toEqual({ cancels: '1' });
    expect({ ...after, [keys.job(jobId)]: undefined, [keys.meta]: undefined }).toEqual({ ...before, [keys.job(jobId)]: undefined, [keys.meta]: undefined });
    // A second cancel keeps the first reason and counts again (a counter bump lost before is made good).
    expect(await control.cancelJob(jobId, 'other', Date.now(), ...KEEP_ALL)).toBe('marked');
    expect(await client.hget(keys.job(jobId), 'cxl')).toBe('stop it');
    expect(await client.hget(keys.meta, 'cancels')).toBe('2');
  });

  it('a job in active without a lock (its worker died) is marked; the sweep gives it back and a cancel then fails it with the first reason', async () => {
    const { keys, scripts, control } = queueFor();
    const { jobId } = await scripts.addJob(newJob());
    await pickup(scripts);
    await client.del(keys.lock(jobId));
    expect(await control.cancelJob(jobId, 'first', Date.now(), ...KEEP_ALL)).toBe('marked');
    expect(await client.hget(keys.job(jobId), 'cxl')).toBe('first');
    expect(await client.lrange(keys.active, 0, -1)).toEqual([jobId]);
    // The fixed sweep, twice: the second finds it stalled and puts it back in wait, mark and all.
    await client.sadd(keys.stalled, jobId);
    await scripts.moveStalledJobsToWait(1, Date.now(), 1);
    expect(await client.lrange(keys.wait, 0, -1)).toEqual([jobId]);
    expect(await control.cancelJob(jobId, 'second', Date.now(), ...KEEP_ALL)).toBe('failed');
    expect(await client.hmget(keys.job(jobId), 'failedReason', 'cxl')).toEqual([`job ${jobId} was cancelled: first`, 'first']);
  });

  it('a pickup of a marked job carries the mark in the fields it returns', async () => {
    const { keys, scripts, control } = queueFor();
    const { jobId } = await scripts.addJob(newJob());
    await pickup(scripts);
    await control.cancelJob(jobId, 'r', Date.now(), ...KEEP_ALL);
    await client.del(keys.lock(jobId));
    await client.lrem(keys.active, 0, jobId);
    await client.rpush(keys.wait, jobId); // as the sweep gives it back
    const again = await pickup(scripts);
    const fields = again.pickup.job!.fields;
    expect(fields[fields.indexOf('cxl') + 1]).toBe('r');
  });

  it('-1 (missing), 0 (completed, failed) and -3 (a hash in no state) write nothing', async () => {
    const { keys, scripts, control } = queueFor();
    const done = (await scripts.addJob(newJob())).jobId;
    const { token } = await pickup(scripts);
    await scripts.moveToFinished({ jobId: done, token, timestamp: Date.now(), outcome: 'completed', value: '1', stacktrace: '', keepCount: -1, keepAgeMs: 0 });
    const stray = (await scripts.addJob(newJob())).jobId;
    await client.lrem(keys.wait, 0, stray);
    const before = await snapshot(client, keys);
    expect(await control.cancelJob('ghost', 'r', Date.now(), ...KEEP_ALL)).toBe('missing');
    expect(await control.cancelJob(done, 'r', Date.now(), ...KEEP_ALL)).toBe('finished');
    expect(await control.cancelJob(stray, 'r', Date.now(), ...KEEP_ALL)).toBe('stateless');
    expect(await snapshot(client, keys)).toEqual(before);
  });

  it('a simple-mode deduplication id is freed (its key deleted); a key with a TTL stays', async () => {
    const { keys, scripts, control } = queueFor();
    const simple = (await scripts.addJob(newJob({ deduplication: { id: 'once', ttl: 0, extend: false, replace: false } }))).jobId;
    const throttled = (await scripts.addJob(newJob({ deduplication: { id: 'slow', ttl: 60_000, extend: false, replace: false } }))).jobId;
    expect(await scripts.getDeduplicationJobId('once')).toBe(simple);
    await control.cancelJob(simple, '', Date.now(), ...KEEP_ALL);
    await control.cancelJob(throttled, '', Date.now(), ...KEEP_ALL);
    expect(await client.exists(keys.deduplication('once'))).toBe(0);
    expect(await client.get(keys.deduplication('slow'))).toBe(throttled);
    expect(await scripts.getDeduplicationJobId('once')).toBeNull();
    expect(await scripts.getDeduplicationJobId('slow')).toBe(throttled);
  });

  it('job.retry (reprocessJob-9) and retryJobs-8 take the mark off: the job runs again', async () => {
    const { keys, scripts, control } = queueFor();
    const a = (await scripts.addJob(newJob())).jobId;
    const b = (await scripts.addJob(newJob())).jobId;
    for (const id of [a, b]) await control.cancelJob(id, 'r', Date.now(), ...KEEP_ALL);
    await control.reprocessJob(a, 'failed');
    expect(await client.hexists(keys.job(a), 'cxl')).toBe(0);
    expect(await control.retryJobs('failed', 10, Date.now())).toBe(1);
    expect(await client.hexists(keys.job(b), 'cxl')).toBe(0);
    expect((await client.lrange(keys.wait, 0, -1)).sort()).toEqual([a, b].sort());
  });
});

describe('cancelledAmong-1', () => {
  it('answers the given ids whose hash has the mark, with their reasons, in order; reads only', async () => {
    const { keys, scripts, control } = queueFor();
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push((await scripts.addJob(newJob())).jobId);
    for (let i = 0; i < 4; i++) await pickup(scripts);
    await control.cancelJob(ids[1], 'why', Date.now(), ...KEEP_ALL);
    await control.cancelJob(ids[3], '', Date.now(), ...KEEP_ALL);
    const before = await snapshot(client, keys);
    const [[error, reply]] = await runPipelined(client, [scripts.cancelledAmongCall([...ids, 'ghost'])]);
    expect(error).toBeNull();
    expect(reply).toEqual([ids[1], 'why', ids[3], '']);
    expect(parseCancelled(reply)).toEqual([{ jobId: ids[1], reason: 'why' }, { jobId: ids[3] }]);
    const [[, none]] = await runPipelined(client, [scripts.cancelledAmongCall([ids[0], ids[2]])]);
    expect(none).toEqual([]);
    expect(await snapshot(client, keys)).toEqual(before);
  });
});
