import { afterAll, describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Command } from 'ioredis';
import { randomUUID as uuid } from 'node:crypto';
import { EchoMQError } from '../lib/index.js';
import { SCRIPTS, Scripts } from '../lib/internal.js';
import { ADD_BATCH } from '../lib/protocol/script-registry.js';
import { PICKUP_KEYS } from '../lib/protocol/script-shapes.js';
import { findLuaDir } from '../lib/protocol/lua-source.js';
import { masters, newClient } from './support/redis.js';
import { newJob, pickAll, pickup, scriptsFor, snapshot } from './support/scripts.js';

// Conformance of every lua script, called through Scripts (or SCRIPTS) against a real Redis.
const client = newClient();
/** The authoring sources of lua/ (with their `-- @include` lines), next to it. */
const luaSrcDir = () => join(dirname(findLuaDir()), 'lua-src');
afterAll(() => client.quit());

async function rejection(promise: Promise<unknown>): Promise<EchoMQError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(EchoMQError);
    return error as EchoMQError;
  }
  throw new Error('expected an EchoMQError');
}

/** One job added and picked up: its id and the token that holds its lock. */
async function activeJob(s = scriptsFor(client), overrides = {}) {
  const { jobId } = await s.scripts.addJob(newJob(overrides));
  const { pickup: taken, token } = await pickup(s.scripts);
  expect(taken.job?.id).toBe(jobId);
  return { ...s, jobId, token };
}

/** A lua file's code without its comments, and the includes it declares. */
function luaFile(path: string): { code: string; declared: string[] } {
  const text = readFileSync(path, 'utf8');
  const declared = [...text.matchAll(/^-- @include (\S+)\s*$/gm)].map((m) => m[1]);
  const code = text.replace(/--\[\[[\s\S]*?\]\]/g, '').replace(/--.*$/gm, '');
  return { code, declared };
}

function finish(jobId: string, token: string, extra = {}) {
  return { jobId, token, timestamp: Date.now(), outcome: 'completed' as const, value: '"ok"', stacktrace: '', keepCount: -1, keepAgeMs: 0, ...extra };
}

describe('the script files', () => {
  it('each script takes as many KEYS as its file name says, and a wrong count fails before Redis', async () => {
    const files = readdirSync(findLuaDir()).filter((f) => f.endsWith('.lua')).sort();
    expect(Object.values(SCRIPTS).map((s) => s.fileName).sort()).toEqual(files);
    for (const script of Object.values(SCRIPTS)) {
      const declared = script.lua.match(/KEYS\[(\d+)\]/g)?.map((m) => Number(m.slice(5, -1))) ?? [];
      expect(Math.max(...declared)).toBe(script.numberOfKeys);
      await expect(script.run(client, ['only-one', 'two', 'three'].slice(0, script.numberOfKeys === 1 ? 2 : 1), []))
        .rejects.toThrow(`takes ${script.numberOfKeys} KEYS`);
    }
  });

  it('every include declares the includes it calls, and every script lists exactly the ones it calls itself', () => {
    const dir = luaSrcDir();
    const includes = new Map(readdirSync(join(dir, 'includes')).map((f) => [f.replace(/\.lua$/, ''), luaFile(join(dir, 'includes', f))]));
    const definedIn = new Map<string, string>();
    for (const [name, { code }] of includes) {
      for (const [, fn] of code.matchAll(/local function (\w+)/g)) definedIn.set(fn, name);
    }
    /** The includes whose functions `code` calls, other than `self`. */
    const calledIncludes = (code: string, self?: string) => new Set(
      [...code.matchAll(/\b(\w+)\(/g)].map((m) => definedIn.get(m[1])).filter((name): name is string => name !== undefined && name !== self),
    );
    const sorted = (names: Iterable<string>) => [...new Set(names)].sort();
    for (const [name, { code, declared }] of includes) {
      expect({ include: name, declared: sorted(declared) }).toEqual({ include: name, declared: sorted(calledIncludes(code, name)) });
    }
    for (const script of Object.values(SCRIPTS)) {
      const { code, declared } = luaFile(join(dir, script.fileName));
      expect({ script: script.fileName, declared: sorted(declared) }).toEqual({ script: script.fileName, declared: sorted(calledIncludes(code)) });
      // Expanded: no include line left; each helper defined once, and before its first use.
      expect(script.lua).not.toMatch(/^-- @include/m);
      const expanded = script.lua.replace(/--\[\[[\s\S]*?\]\]/g, '').replace(/--.*$/gm, '');
      for (const fn of definedIn.keys()) {
        const definitions = expanded.split(`local function ${fn}(`).length - 1;
        if (definitions === 0) continue;
        const firstUse = expanded.search(new RegExp(`\\b${fn}\\(`));
        expect({ script: script.fileName, fn, definitions, definedAtFirstUse: firstUse === expanded.indexOf(`local function ${fn}(`) + 15 })
          .toEqual({ script: script.fileName, fn, definitions: 1, definedAtFirstUse: true });
      }
    }
  });

  it('the eleven pickup KEYS are listed once on each side, in the same order', () => {
    const dir = luaSrcDir();
    const { code } = luaFile(join(dir, 'includes', 'pickupKeys.lua'));
    const luaOrder = [...code.matchAll(/(\w+) = KEYS\[(\d+)\]/g)].sort((a, b) => Number(a[2]) - Number(b[2])).map((m) => m[1]);
    expect(luaOrder).toEqual([...PICKUP_KEYS]);
    expect(luaOrder.map((_, i) => i + 1)).toEqual(Array.from({ length: 11 }, (_, i) => i + 1));
    for (const file of ['moveToActive-11.lua', 'moveToFinished-14.lua', 'finishJobs-13.lua']) {
      const own = luaFile(join(dir, file));
      expect({ file, byHand: own.code.match(/KEYS\[([1-9]|1[01])\]/g) }).toEqual({ file, byHand: null });
      expect(own.declared).toContain('pickupKeys');
    }
  });

  it('recovers from SCRIPT FLUSH without failing the caller (single call and pipeline)', async () => {
    const { scripts } = scriptsFor(client);
    const servers = await masters(client); // SCRIPT goes to one node: on a Cluster, to each master
    const flush = () => Promise.all(servers.map((server) => server.script('FLUSH')));
    await scripts.addJob(newJob());
    await flush();
    const { jobId } = await scripts.addJob(newJob());
    expect(jobId).toBe('2');
    await flush();
    const added = await scripts.addJobs([newJob(), newJob()]);
    expect(added).toEqual([{ jobId: '3', created: true }, { jobId: '4', created: true }]);
    const loaded = await Promise.all(servers.map((server) => server.script('EXISTS', SCRIPTS.addJobs.sha)));
    expect(loaded.flat()).toContain(1); // loaded again where the queue's slot lives
  });
});

describe('addJobs-9', () => {
  it('adds a batch as addJob-9 would, in order, over several calls of ADD_BATCH jobs', async () => {
    const { keys, scripts } = scriptsFor(client);
    await scripts.addJob(newJob({ customId: 'kept', data: '{"v":1}' }));
    const batch = [
      newJob({ customId: 'kept', data: '{"v":2}' }), // exists: left as it was
      newJob({ priority: 2 }),
      newJob({ delay: 60_000 }),
      ...Array.from({ length: ADD_BATCH + 10 }, () => newJob()),
      newJob({ customId: 'fresh' }),
      newJob({ customId: 'fresh' }), // the same id twice in one batch: the second is the first
    ];
    const added = await scripts.addJobs(batch);
    expect(added).toHaveLength(batch.length);
    expect(added[0]).toEqual({ jobId: 'kept', created: false });
    expect(await client.hget(keys.job('kept'), 'data')).toBe('{"v":1}');
    expect(added.slice(1, 4)).toEqual([{ jobId: '1', created: true }, { jobId: '2', created: true }, { jobId: '3', created: true }]);
    expect(added.at(-2)).toEqual({ jobId: 'fresh', created: true });
    expect(added.at(-1)).toEqual({ jobId: 'fresh', created: false });
    expect(await client.zrange(keys.prioritized, '0', '-1')).toEqual(['1']);
    expect(await client.zrange(keys.delayed, '0', '-1')).toEqual(['2']);
    expect(await client.llen(keys.wait)).toBe(ADD_BATCH + 10 + 2); // the plain jobs, 'kept' and 'fresh'
    expect((await client.lrange(keys.wait, '-1', '-1'))[0]).toBe('kept'); // FIFO: the oldest runs first
    expect(await client.zscore(keys.marker, '0')).toBe('0');
  });

  it('on a paused queue puts ready jobs in paused and sets no ready marker', async () => {
    const { keys, scripts, admin } = scriptsFor(client);
    await admin.pause('pause');
    await scripts.addJobs([newJob(), newJob()]);
    expect(await client.lrange(keys.paused, '0', '-1')).toEqual(['2', '1']);
    expect(await client.llen(keys.wait)).toBe(0);
    expect(await client.zscore(keys.marker, '0')).toBeNull();
  });
});

describe('addJob-9', () => {
  it('adds plain jobs to wait with counter ids, and emits waiting', async () => {
    const { keys, scripts } = scriptsFor(client);
    expect(await scripts.addJob(newJob({ name: 'a', data: '{"n":1}' }))).toEqual({ jobId: '1', created: true });
    expect(await scripts.addJob(newJob())).toEqual({ jobId: '2', created: true });
    expect(await client.lrange(keys.wait, '0', '-1')).toEqual(['2', '1']);
    expect(await client.hget(keys.job('1'), 'data')).toBe('{"n":1}');
    expect(await client.zcard(keys.marker)).toBe(1);
    const events = await client.xrange(keys.events, '-', '+');
    expect(events.map(([, f]) => f[1])).toEqual(['waiting', 'waiting']);
  });

  it('a duplicate custom id returns the existing job and writes nothing', async () => {
    const { keys, scripts } = scriptsFor(client);
    expect(await scripts.addJob(newJob({ customId: 'order-a', data: '{"v":1}' }))).toEqual({ jobId: 'order-a', created: true });
    const before = await snapshot(client, keys);
    expect(await scripts.addJob(newJob({ customId: 'order-a', data: '{"v":2}', delay: 500 }))).toEqual({ jobId: 'order-a', created: false });
    expect(await snapshot(client, keys)).toEqual(before);
  });

  it('puts delayed jobs in delayed, scored by due time, and sets the marker to that time', async () => {
    const { keys, scripts } = scriptsFor(client);
    const now = Date.now();
    await scripts.addJob(newJob({ timestamp: now, delay: 5000 }));
    expect(await client.zrange(keys.delayed, '0', '-1', 'WITHSCORES')).toEqual(['1', String(now + 5000)]);
    expect(await client.zscore(keys.marker, '1')).toBe(String(now + 5000));
    expect(await client.llen(keys.wait)).toBe(0);
  });

  it('puts prioritized jobs in prioritized, FIFO within one priority; paused queues get the paused list', async () => {
    const { keys, scripts, admin } = scriptsFor(client);
    await scripts.addJob(newJob({ priority: 3 }));
    await scripts.addJob(newJob({ priority: 1 }));
    await scripts.addJob(newJob({ priority: 3 }));
    await scripts.addJob(newJob());
    expect(await client.zrange(keys.prioritized, '0', '-1')).toEqual(['2', '1', '3']);
    expect(await pickAll(scripts)).toEqual(['4', '2', '1', '3']);
    await admin.pause('pause');
    await scripts.addJob(newJob());
    expect(await client.lrange(keys.paused, '0', '-1')).toEqual(['5']);
  });

  it('keeps FIFO within the highest priority allowed (the score stays an exact double)', async () => {
    const { keys, scripts } = scriptsFor(client);
    const { DEFAULTS } = await import('../lib/runtime/core/defaults.js');
    // Counter values 3, 4, 5: above 2^53 they would round to one score, and ties go by member name.
    await client.set(keys.pc, 2);
    for (const customId of ['job-c', 'job-b', 'job-a']) await scripts.addJob(newJob({ customId, priority: DEFAULTS.maxPriority }));
    expect(await pickAll(scripts)).toEqual(['job-c', 'job-b', 'job-a']);
  });
});

describe('moveToActive-11', () => {
  it('takes the oldest job, acquires its lock with the token under PX, counts ats, emits active', async () => {
    const { keys, scripts } = scriptsFor(client);
    await scripts.addJob(newJob());
    await scripts.addJob(newJob());
    const { pickup: taken, token } = await pickup(scripts, 10_000);
    expect(taken.job?.id).toBe('1');
    expect(await client.get(keys.lock('1'))).toBe(token);
    const ttl = await client.pttl(keys.lock('1'));
    expect(ttl).toBeGreaterThan(5000);
    expect(ttl).toBeLessThanOrEqual(10_000);
    expect(await client.lrange(keys.active, '0', '-1')).toEqual(['1']);
    expect(await client.hget(keys.job('1'), 'ats')).toBe('1');
    expect(await client.hget(keys.job('1'), 'processedOn')).not.toBeNull();
    // More work left: the marker is passed on for another worker.
    expect(await client.zcard(keys.marker)).toBe(1);
    const last = await client.xrevrange(keys.events, '+', '-', 'COUNT', 1);
    expect(last[0][1].slice(0, 4)).toEqual(['event', 'active', 'jobId', '1']);
  });

  it('returns no job when empty or paused, with the next delayed time; promotes due delayed jobs', async () => {
    const { keys, scripts, admin } = scriptsFor(client);
    expect((await pickup(scripts)).pickup).toEqual({ job: undefined, nextDelayedAt: 0, rateLimitedFor: 0 });
    const now = Date.now();
    await scripts.addJob(newJob({ timestamp: now, delay: 60_000 }));
    await scripts.addJob(newJob({ timestamp: now - 1000, delay: 500 }));
    const { pickup: taken } = await pickup(scripts);
    expect(taken.job?.id).toBe('2');
    expect(taken.nextDelayedAt).toBe(now + 60_000);
    await scripts.addJob(newJob());
    await admin.pause('pause');
    expect((await pickup(scripts)).pickup.job).toBeUndefined();
    expect(await client.lrange(keys.paused, '0', '-1')).toEqual(['3']);
  });

  it('drops an id whose hash is missing instead of handing out an empty job', async () => {
    const { keys, scripts } = scriptsFor(client);
    await scripts.addJob(newJob());
    await scripts.addJob(newJob());
    await client.del(keys.job('1'));
    expect((await pickup(scripts)).pickup.job?.id).toBe('2');
    expect(await client.lrange(keys.active, '0', '-1')).toEqual(['2']);
    expect(await client.exists(keys.lock('1'))).toBe(0);
  });
});

describe('extendLock-2 and extendLocks-1', () => {
  it('extendLock renews only for the holding token, and takes the job off stalled', async () => {
    const { keys, scripts, jobId, token } = await activeJob();
    await client.sadd(keys.stalled, jobId);
    await client.pexpire(keys.lock(jobId), 1000);
    expect(await scripts.extendLock(jobId, token, 20_000)).toBe(true);
    expect(await client.pttl(keys.lock(jobId))).toBeGreaterThan(10_000);
    expect(await client.sismember(keys.stalled, jobId)).toBe(0);

    await client.sadd(keys.stalled, jobId);
    const before = await snapshot(client, keys);
    expect(await scripts.extendLock(jobId, uuid(), 20_000)).toBe(false);
    await client.del(keys.lock(jobId));
    expect(await scripts.extendLock(jobId, token, 20_000)).toBe(false);
    expect(await client.exists(keys.lock(jobId))).toBe(0);
    expect(await client.sismember(keys.stalled, jobId)).toBe(1);
    delete before[keys.lock(jobId)];
    expect(await snapshot(client, keys)).toEqual(before);
  });

  it('extendLocks renews every held lock and reports -2 (no lock) and -6 (other token)', async () => {
    const s = scriptsFor(client);
    const a = await activeJob(s);
    const b = await activeJob(s);
    const c = await activeJob(s);
    await client.del(s.keys.lock(b.jobId));
    await client.set(s.keys.lock(c.jobId), 'someone-else', 'PX', 30_000);
    await client.sadd(s.keys.stalled, a.jobId, b.jobId, c.jobId);
    const [[error, reply]] = await (await import('../lib/protocol/script.js')).runPipelined(client, [
      s.scripts.extendLocksCall([[a.jobId, a.token], [b.jobId, b.token], [c.jobId, c.token]], 25_000),
    ]);
    expect(error).toBeNull();
    expect(reply).toEqual([b.jobId, -2, c.jobId, -6]);
    expect(await client.smembers(s.keys.stalled)).toEqual(expect.arrayContaining([b.jobId, c.jobId]));
    expect(await client.sismember(s.keys.stalled, a.jobId)).toBe(0);
    expect(await client.get(s.keys.lock(c.jobId))).toBe('someone-else');
    expect(await client.exists(s.keys.lock(b.jobId))).toBe(0);

    const all = await SCRIPTS.extendLocks.run(client, [s.keys.stalled], [s.keys.base, 25_000, a.jobId, a.token]);
    expect(all).toEqual([]);
  });
});

describe('moveToFinished-14', () => {
  it('completes: releases the lock, records the result, adds to completed, emits completed', async () => {
    const { keys, scripts, jobId, token } = await activeJob();
    await client.sadd(keys.stalled, jobId);
    const next = await scripts.moveToFinished(finish(jobId, token, { value: '{"r":1}' }));
    expect(next.job).toBeUndefined();
    expect(await client.exists(keys.lock(jobId))).toBe(0);
    expect(await client.sismember(keys.stalled, jobId)).toBe(0);
    expect(await client.llen(keys.active)).toBe(0);
    expect(await client.zrange(keys.completed, '0', '-1')).toEqual([jobId]);
    expect(await client.hmget(keys.job(jobId), 'returnvalue', 'atm')).toEqual(['{"r":1}', '1']);
    const last = await client.xrevrange(keys.events, '+', '-', 'COUNT', 1);
    expect(last[0][1]).toEqual(['event', 'completed', 'jobId', jobId, 'returnvalue', '{"r":1}']);
  });

  it('fails: stores failedReason and stacktrace in failed', async () => {
    const { keys, scripts, jobId, token } = await activeJob();
    await scripts.moveToFinished(finish(jobId, token, { outcome: 'failed', value: 'boom', stacktrace: '["at x"]' }));
    expect(await client.zrange(keys.failed, '0', '-1')).toEqual([jobId]);
    expect(await client.hmget(keys.job(jobId), 'failedReason', 'stacktrace')).toEqual(['boom', '["at x"]']);
  });

  it('fetch-next takes the next job in the same call with the new token', async () => {
    const s = scriptsFor(client);
    const { keys, scripts, jobId, token } = await activeJob(s);
    await scripts.addJob(newJob());
    const nextToken = uuid();
    const next = await scripts.moveToFinished(finish(jobId, token, { next: { token: nextToken, lockDuration: 20_000 } }));
    expect(next.job?.id).toBe('2');
    expect(next.job?.fields).toEqual(expect.arrayContaining(['name', 'test', 'ats', '1']));
    expect(await client.get(keys.lock('2'))).toBe(nextToken);
    expect(await client.lrange(keys.active, '0', '-1')).toEqual(['2']);
  });

  it('keep count 0 removes the job now; a positive count keeps only the newest', async () => {
    const s = scriptsFor(client);
    const first = await activeJob(s);
    await s.scripts.moveToFinished(finish(first.jobId, first.token, { keepCount: 0 }));
    expect(await client.exists(s.keys.job(first.jobId))).toBe(0);
    expect(await client.zcard(s.keys.completed)).toBe(0);
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      const job = await activeJob(s);
      ids.push(job.jobId);
      await s.scripts.moveToFinished(finish(job.jobId, job.token, { keepCount: 2, timestamp: Date.now() + i }));
    }
    expect(await client.zrange(s.keys.completed, '0', '-1')).toEqual(ids.slice(2));
    expect(await client.exists(s.keys.job(ids[0]), s.keys.job(ids[1]))).toBe(0);
  });

  it('a keep rule deletes at most 1000 jobs a call (a batch shares them); a backlog shrinks over the next finishes', async () => {
    const s = scriptsFor(client);
    const backlog = 2500; // finished while the rule kept every job
    await s.scripts.addJobs(Array.from({ length: backlog }, () => newJob()));
    const ids = await client.lrange(s.keys.wait, '0', '-1');
    await client.del(s.keys.wait);
    await client.zadd(s.keys.completed, ...ids.flatMap((id) => [Number(id), id]));
    const finishKeeping10 = async () => {
      const job = await activeJob(s);
      await s.scripts.moveToFinished(finish(job.jobId, job.token, { keepCount: 10 }));
      return job.jobId;
    };
    const first = await finishKeeping10();
    expect(await client.zcard(s.keys.completed)).toBe(backlog + 1 - 1000);
    expect(await client.exists(s.keys.job('1'), s.keys.job('1000'))).toBe(0); // the oldest went first
    expect(await client.exists(s.keys.job('1001'), s.keys.job(first))).toBe(2);

    const batch = [];
    for (let i = 0; i < 3; i++) batch.push(await activeJob(s));
    await s.scripts.finishJobs(batch.map((j) => finish(j.jobId, j.token, { keepCount: 10 })), Date.now(), 20_000);
    expect(await client.zcard(s.keys.completed)).toBe(backlog + 4 - 2000);
    await finishKeeping10();
    expect(await client.zcard(s.keys.completed)).toBe(10);
    // The 10 newest: the 5 jobs just finished and the last 5 of the backlog.
    expect((await client.zrange(s.keys.completed, '0', '4'))).toEqual(['2496', '2497', '2498', '2499', '2500']);
    expect(await client.exists(s.keys.job('2495'))).toBe(0);

    // The age rule shares the bound: at most 1000 a call, the oldest first.
    const aged = scriptsFor(client);
    await client.zadd(aged.keys.completed, ...Array.from({ length: 1500 }, (_, i) => [1000 + i, `old-${i}`]).flat());
    const job = await activeJob(aged);
    await aged.scripts.moveToFinished(finish(job.jobId, job.token, { keepAgeMs: 60_000 }));
    expect(await client.zcard(aged.keys.completed)).toBe(501);
    expect(await client.zrange(aged.keys.completed, '0', '0')).toEqual(['old-1000']);
  });

  it('-1 no job, -2 no lock, -6 another token, -3 not in active: each changes nothing', async () => {
    const s = scriptsFor(client);
    const { keys, scripts, jobId, token } = await activeJob(s);

    const missing = await rejection(scripts.moveToFinished(finish('nope', token)));
    expect([missing.code, missing.jobId, missing.script]).toEqual([-1, 'nope', 'moveToFinished-14.lua']);

    const before = await snapshot(client, keys);
    const mismatch = await rejection(scripts.moveToFinished(finish(jobId, uuid())));
    expect([mismatch.code, mismatch.codeName]).toEqual([-6, 'JobLockMismatch']);
    expect(mismatch.message).toContain(jobId);
    expect(await snapshot(client, keys)).toEqual(before);

    await client.del(keys.lock(jobId));
    const noLockBefore = await snapshot(client, keys);
    expect((await rejection(scripts.moveToFinished(finish(jobId, token)))).code).toBe(-2);
    expect(await snapshot(client, keys)).toEqual(noLockBefore);

    await client.set(keys.lock(jobId), token);
    await client.lrem(keys.active, 0, jobId);
    const notActive = await snapshot(client, keys);
    expect((await rejection(scripts.moveToFinished(finish(jobId, token)))).code).toBe(-3);
    expect(await snapshot(client, keys)).toEqual(notActive);
  });
});

describe('finishJobs-13 (the batch form of moveToFinished-14)', () => {
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
  const next = (token = uuid()) => ({ next: { token, lockDuration: 20_000 } });

  it('finishes every job as moveToFinished-14 would, and hands each its next job under its own token', async () => {
    const s = scriptsFor(client);
    const { keys, scripts } = s;
    const [a, b, c] = await activeJobs(s, 3);
    await client.sadd(keys.stalled, a.jobId, b.jobId, c.jobId);
    await scripts.addJobs([newJob(), newJob()]); // ids 4 and 5: two ready jobs for three asking
    const tokens = [uuid(), uuid(), uuid()];
    const results = await scripts.finishJobs([
      finish(a.jobId, a.token, { value: '{"r":"a"}', ...next(tokens[0]) }),
      finish(b.jobId, b.token, { outcome: 'failed', value: 'boom', stacktrace: '["at b"]', ...next(tokens[1]) }),
      finish(c.jobId, c.token, { ...next(tokens[2]) }),
    ], Date.now(), 20_000);
    expect(results.map((r) => ('job' in r ? r.job?.id : r))).toEqual(['4', '5', undefined]);
    expect(await client.mget(keys.lock('4'), keys.lock('5'))).toEqual([tokens[0], tokens[1]]);
    expect(await client.pttl(keys.lock('4'))).toBeGreaterThan(19_000);
    expect(await client.exists(keys.lock(a.jobId), keys.lock(b.jobId), keys.lock(c.jobId))).toBe(0);
    expect(await client.smembers(keys.stalled)).toEqual([]);
    expect(await client.zrange(keys.completed, '0', '-1')).toEqual([a.jobId, c.jobId].sort());
    expect(await client.zrange(keys.failed, '0', '-1')).toEqual([b.jobId]);
    expect(await client.hmget(keys.job(a.jobId), 'returnvalue', 'atm')).toEqual(['{"r":"a"}', '1']);
    expect(await client.hmget(keys.job(b.jobId), 'failedReason', 'stacktrace', 'atm')).toEqual(['boom', '["at b"]', '1']);
    expect(await client.hget(keys.job('4'), 'ats')).toBe('1');
    expect((await client.lrange(keys.active, '0', '-1')).sort()).toEqual(['4', '5']);
    const events = (await client.xrange(keys.events, '-', '+')).map(([, f]) => `${f[1]}:${f[3]}`);
    expect(events.slice(-5)).toEqual([`completed:${a.jobId}`, `failed:${b.jobId}`, `completed:${c.jobId}`, 'active:4', 'active:5']);
  });

  it('a job refused (-6, -2, -1) is left as it was and takes no next job; the others finish', async () => {
    const s = scriptsFor(client);
    const { keys, scripts } = s;
    const [a, b, c] = await activeJobs(s, 3);
    await client.del(keys.lock(c.jobId));
    await scripts.addJobs([newJob(), newJob(), newJob()]);
    const bBefore = await client.hgetall(keys.job(b.jobId));
    const results = await scripts.finishJobs([
      finish(a.jobId, a.token, next()),
      finish(b.jobId, uuid(), next()), // another token holds b's lock
      finish(c.jobId, c.token, next()), // c's lock lapsed
      finish('nope', uuid(), next()),
    ], Date.now(), 20_000);
    expect('job' in results[0] && results[0].job?.id).toBe('4');
    expect(results.slice(1).map((r) => (r instanceof EchoMQError ? [r.code, r.jobId, r.script] : r))).toEqual([
      [-6, b.jobId, 'finishJobs-13.lua'], [-2, c.jobId, 'finishJobs-13.lua'], [-1, 'nope', 'finishJobs-13.lua'],
    ]);
    expect(await client.get(keys.lock(b.jobId))).toBe(b.token);
    expect(await client.hgetall(keys.job(b.jobId))).toEqual(bBefore);
    expect((await client.lrange(keys.active, '0', '-1')).sort()).toEqual([b.jobId, c.jobId, '4'].sort());
    expect(await client.lrange(keys.wait, '0', '-1')).toEqual(['6', '5']);
  });

  it('keep rules mixed in one call leave what one moveToFinished-14 after another leaves', async () => {
    // Each job's rule, in call order: the count rule runs once per set and call, removed jobs go
    // with the call's one DEL; any other rule on a set runs the pending count trim first.
    const rules = [
      { keepCount: 3 }, { keepCount: 3 }, { keepCount: 0 }, { keepCount: -1 }, { keepCount: 3 },
      { keepCount: 1, outcome: 'failed' as const, value: 'boom', stacktrace: '[]' }, { keepCount: 0, outcome: 'failed' as const, value: 'x', stacktrace: '[]' },
      { keepCount: 2 }, { keepCount: 2 }, { keepCount: 4 }, { keepCount: -1, keepAgeMs: 60_000 }, { keepCount: -1 },
    ];
    const base = Date.now();
    const scores = [5, 1, 2, 9, 3, 4, 6, 8, 0, 7, 10, 11]; // finishedOn out of call order
    /** A queue with three older completed jobs (hash and logs) and the rules' jobs active. */
    const prepare = async () => {
      const s = scriptsFor(client);
      for (const [i, id] of ['old-a', 'old-b', 'old-c'].entries()) {
        await client.zadd(s.keys.completed, base - 1000 + i, id);
        await client.hset(s.keys.job(id), 'name', 'old');
        await client.rpush(s.keys.logs(id), 'a line');
      }
      const jobs = await activeJobs(s, rules.length);
      for (const { jobId } of jobs) await client.rpush(s.keys.logs(jobId), 'a line');
      const finishes = jobs.map((j, i) => finish(j.jobId, j.token, { ...rules[i], timestamp: base + scores[i] }));
      return { s, finishes };
    };
    /** What the finishes left: the sets with scores, and per job its hash's outcome, logs and lock. */
    const state = async (s: ReturnType<typeof scriptsFor>) => {
      const ids = ['old-a', 'old-b', 'old-c', ...Array.from({ length: rules.length }, (_, i) => String(i + 1))];
      const jobs: Record<string, unknown> = {};
      for (const id of ids) {
        jobs[id] = [await client.hmget(s.keys.job(id), 'name', 'finishedOn', 'returnvalue', 'failedReason', 'atm'),
          await client.exists(s.keys.logs(id)), await client.exists(s.keys.lock(id))];
      }
      return {
        completed: await client.zrange(s.keys.completed, '0', '-1', 'WITHSCORES'),
        failed: await client.zrange(s.keys.failed, '0', '-1', 'WITHSCORES'),
        active: await client.lrange(s.keys.active, '0', '-1'),
        events: (await client.xrange(s.keys.events, '-', '+')).map(([, f]) => f.join(' ')).filter((e) => !e.includes('added') && !e.includes('active')),
        jobs,
      };
    };
    const one = await prepare();
    for (const f of one.finishes) await one.s.scripts.moveToFinished(f);
    const batch = await prepare();
    const results = await batch.s.scripts.finishJobs(batch.finishes, base, 20_000);
    expect(results.every((r) => !(r instanceof Error))).toBe(true);
    const expected = await state(one.s);
    expect(await state(batch.s)).toEqual(expected);
    // The case is not empty: some jobs were trimmed away, some removed at once, some kept.
    expect(expected.completed.length / 2).toBe(5);
    expect(Object.values(expected.jobs).filter((j) => (j as unknown[])[1] === 0).length).toBeGreaterThan(4);
  });

  it('a job its finish would remove keeps every check: -1, -2, -6 and -3 change nothing', async () => {
    const s = scriptsFor(client);
    const { keys, scripts } = s;
    const [a, b, c] = await activeJobs(s, 3);
    await client.del(keys.lock(b.jobId));
    await client.lrem(keys.active, 0, c.jobId);
    const before = await snapshot(client, keys);
    const remove = { keepCount: 0 };
    const results = await scripts.finishJobs([
      finish('nope', uuid(), remove), finish(a.jobId, uuid(), remove), finish(b.jobId, b.token, remove), finish(c.jobId, c.token, remove),
    ], Date.now(), 20_000);
    expect(results.map((r) => (r instanceof EchoMQError ? r.code : r))).toEqual([-1, -6, -2, -3]);
    expect(await snapshot(client, keys)).toEqual(before);
    const [done] = await scripts.finishJobs([finish(a.jobId, a.token, remove)], Date.now(), 20_000);
    expect(done).not.toBeInstanceOf(Error);
    expect(await client.exists(keys.job(a.jobId), keys.lock(a.jobId), keys.logs(a.jobId))).toBe(0);
  });

  it("hands the next job's hash over whole (sent as one JSON string): non-ASCII, quotes, backslashes, control characters", async () => {
    const s = scriptsFor(client);
    const [a, b] = await activeJobs(s, 2);
    const data = JSON.stringify({ s: 'héllo 日本 😀 "q" \\ / \n\t\u0001', n: 1.5e300 });
    const name = 'ünï\u0000cødé "name"';
    const { jobId } = await s.scripts.addJob(newJob({ name, data }));
    const [taken, none] = await s.scripts.finishJobs([finish(a.jobId, a.token, next()), finish(b.jobId, b.token, next())], Date.now(), 20_000);
    expect('job' in taken && taken.job?.id).toBe(jobId);
    const fields = (taken as { job: { fields: string[] } }).job.fields;
    expect(fields.slice(0, 4)).toEqual(['name', name, 'data', data]);
    const record = Object.fromEntries(Array.from({ length: fields.length / 2 }, (_, i) => [fields[2 * i], fields[2 * i + 1]]));
    expect(record).toEqual(await client.hgetall(s.keys.job(jobId)));
    expect('job' in none && none.job).toBeUndefined();
  });

  it("sends a small next job's hash as one JSON string and a big one (over 2,048 bytes) as the flat array, both whole", async () => {
    const s = scriptsFor(client);
    const [a, b] = await activeJobs(s, 2);
    // The raw replies, as Redis sent them: the shape is the script's choice, the decoded fields the same.
    const replies: unknown[] = [];
    const spy = new Proxy(client, {
      get(target, property) {
        // A copy: Scripts empties a reply once read.
        const keep = (reply: unknown) => replies.push(Array.isArray(reply) ? [...reply] : reply);
        if (property === 'evalsha' || property === 'eval') { // eval: the NOSCRIPT resend
          return async (...args: unknown[]) => {
            const reply = await (target[property] as (...a: unknown[]) => Promise<unknown>)(...args);
            keep(reply);
            return reply;
          };
        }
        if (property === 'sendCommand') { // EVALSHA as a built Command (script-command.ts)
          return (command: Command) => {
            command.promise.then(keep, () => undefined); // registered before the caller awaits it, so it runs first
            return target.sendCommand(command);
          };
        }
        const value = Reflect.get(target, property) as unknown;
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    const scripts = new Scripts(spy, s.keys, 1000);
    const small = await s.scripts.addJob(newJob({ data: JSON.stringify({ s: 'small' }) }));
    const big = await s.scripts.addJob(newJob({ data: JSON.stringify({ s: '"quoted" '.repeat(400) }) }));
    const taken = await scripts.finishJobs([finish(a.jobId, a.token, next()), finish(b.jobId, b.token, next())], Date.now(), 20_000);
    const [results] = replies.at(-1) as [unknown[]];
    expect([typeof results[2], Array.isArray(results[5])]).toEqual(['string', true]);
    for (const [i, id] of [[0, small.jobId], [1, big.jobId]] as const) {
      const fields = (taken[i] as { job: { id: string; fields: string[] } }).job;
      expect(fields.id).toBe(id);
      const record = Object.fromEntries(Array.from({ length: fields.fields.length / 2 }, (_, j) => [fields.fields[2 * j], fields.fields[2 * j + 1]]));
      expect(record).toEqual(await client.hgetall(s.keys.job(id)));
    }
  });

  it('takes no next job while paused, and no more than the rate limit lets through', async () => {
    const s = scriptsFor(client);
    const [a, b] = await activeJobs(s, 2);
    await s.scripts.addJobs([newJob(), newJob(), newJob()]);
    await s.admin.pause('pause');
    const paused = await s.scripts.finishJobs([finish(a.jobId, a.token, next()), finish(b.jobId, b.token, next())], Date.now(), 20_000);
    expect(paused.map((r) => 'job' in r && r.job)).toEqual([undefined, undefined]);
    expect(await client.zcard(s.keys.completed)).toBe(2);

    const limited = scriptsFor(client);
    const rated = new Scripts(client, limited.keys, 1000);
    const limit = { max: 2, duration: 60_000 };
    await rated.addJobs(Array.from({ length: 5 }, () => newJob()));
    const firstToken = uuid();
    const first = await rated.moveToActive(firstToken, 20_000, Date.now(), limit);
    const [second] = await rated.finishJobs([finish(first.job!.id, firstToken, next())], Date.now(), 20_000, limit);
    expect('job' in second && second.job?.id).toBe('2'); // the window's second pickup
    const secondToken = (await client.get(limited.keys.lock('2')))!;
    const [cut] = await rated.finishJobs([finish('2', secondToken, next())], Date.now(), 20_000, limit);
    expect('job' in cut && cut.job).toBeUndefined();
    expect('rateLimitedFor' in cut && cut.rateLimitedFor).toBeGreaterThan(50_000);
    expect(await client.zcard(limited.keys.completed)).toBe(2);
  });

  it('a pickup that fails half-way leaves the jobs finished before it finished (Redis rolls nothing back)', async () => {
    const s = scriptsFor(client);
    const [a, b, c] = await activeJobs(s, 3);
    const addBroken = async () => {
      const { jobId } = await s.scripts.addJob(newJob());
      await client.hset(s.keys.job(jobId), 'ats', 'not a number'); // the pickup's arithmetic fails on it
      return jobId;
    };
    const first = await addBroken();
    await expect(s.scripts.moveToFinished(finish(c.jobId, c.token, next()))).rejects.toThrow(/arithmetic/);
    const second = await addBroken();
    await expect(s.scripts.finishJobs([finish(a.jobId, a.token, next()), finish(b.jobId, b.token, next())], Date.now(), 20_000))
      .rejects.toThrow(/arithmetic/);
    for (const { jobId } of [a, b, c]) {
      expect(await client.exists(s.keys.lock(jobId))).toBe(0);
      expect(await client.zscore(s.keys.completed, jobId)).not.toBeNull();
    }
    // The jobs the failed pickups had popped sit in active without a lock: the stalled sweep's to recover.
    expect((await client.lrange(s.keys.active, '0', '-1')).sort()).toEqual([first, second].sort());
    expect(await client.exists(s.keys.lock(first), s.keys.lock(second))).toBe(0);
    expect(await client.smembers(s.keys.stalled)).toEqual([]);
  });

  it('keeps the events stream bounded: its events go untrimmed, then one trim at the end of the call', async () => {
    const s = scriptsFor(client);
    const small = new Scripts(client, s.keys, 50);
    const jobs = await activeJobs(s, 150);
    await small.finishJobs(jobs.map((j) => finish(j.jobId, j.token)), Date.now(), 20_000);
    // MAXLEN ~ trims whole stream nodes (100 entries by default), so the bound is approximate.
    expect(await client.xlen(s.keys.events)).toBeLessThanOrEqual(50 + 100);
    const last = await client.xrevrange(s.keys.events, '+', '-', 'COUNT', 1);
    expect(last[0][1]).toEqual(['event', 'completed', 'jobId', jobs[149].jobId, 'returnvalue', '"ok"']);
  });

  it('skips an id whose hash is missing (removed event) and takes the next ready job in its place', async () => {
    const s = scriptsFor(client);
    const [a, b] = await activeJobs(s, 2);
    await s.scripts.addJobs([newJob(), newJob(), newJob()]); // 3, 4, 5
    await client.del(s.keys.job('3'));
    const results = await s.scripts.finishJobs([finish(a.jobId, a.token, next()), finish(b.jobId, b.token, next())], Date.now(), 20_000);
    expect(results.map((r) => 'job' in r && r.job?.id)).toEqual(['4', '5']);
    expect(await client.lrange(s.keys.active, '0', '-1')).toEqual(['5', '4']);
    const removed = (await client.xrange(s.keys.events, '-', '+')).find(([, f]) => f[1] === 'removed');
    expect(removed?.[1]).toEqual(['event', 'removed', 'jobId', '3', 'reason', 'job hash missing at pickup']);
  });
});

describe('retryJob-12', () => {
  it('puts the job back to wait (no delay) or to delayed (backoff), releasing its lock', async () => {
    const s = scriptsFor(client);
    const { keys, scripts, jobId, token } = await activeJob(s);
    await scripts.retryJob({ jobId, token, timestamp: Date.now(), delay: 0, failedReason: 'try again', stacktrace: '[]' });
    expect(await client.lrange(keys.wait, '0', '-1')).toEqual([jobId]);
    expect(await client.exists(keys.lock(jobId))).toBe(0);
    expect(await client.hmget(keys.job(jobId), 'atm', 'failedReason')).toEqual(['1', 'try again']);

    const again = await pickup(scripts);
    const now = Date.now();
    await scripts.retryJob({ jobId, token: again.token, timestamp: now, delay: 2000, failedReason: 'later', stacktrace: '[]' });
    expect(await client.zrange(keys.delayed, '0', '-1', 'WITHSCORES')).toEqual([jobId, String(now + 2000)]);
    expect(await client.llen(keys.active)).toBe(0);
    expect(await client.hget(keys.job(jobId), 'ats')).toBe('2');
  });

  it('-1, -2, -6 and -3 change nothing', async () => {
    const { keys, scripts, jobId, token } = await activeJob();
    const retry = (id: string, t: string) => scripts.retryJob({ jobId: id, token: t, timestamp: Date.now(), delay: 0, failedReason: 'x', stacktrace: '[]' });
    expect((await rejection(retry('ghost', token))).code).toBe(-1);
    const before = await snapshot(client, keys);
    expect((await rejection(retry(jobId, uuid()))).code).toBe(-6);
    expect(await snapshot(client, keys)).toEqual(before);
    await client.del(keys.lock(jobId));
    expect((await rejection(retry(jobId, token))).code).toBe(-2);
    await client.set(keys.lock(jobId), token);
    await client.lrem(keys.active, 0, jobId);
    const notActive = await snapshot(client, keys);
    expect((await rejection(retry(jobId, token))).code).toBe(-3);
    expect(await snapshot(client, keys)).toEqual(notActive);
  });
});

describe('moveStalledJobsToWait-8', () => {
  it('marks active jobs on the first sweep; moves the unlocked ones on the next; fails them past the limit', async () => {
    const s = scriptsFor(client);
    const held = await activeJob(s);
    const lapsed = await activeJob(s);
    const sweep = () => s.scripts.moveStalledJobsToWait(1, Date.now(), 60_000);

    expect(await sweep()).toEqual({ movedToWait: [], movedToFailed: [] });
    expect((await client.smembers(s.keys.stalled)).sort()).toEqual([held.jobId, lapsed.jobId].sort());
    // The guard: a second sweep within the interval does nothing.
    await client.del(s.keys.lock(lapsed.jobId));
    expect(await sweep()).toEqual({ movedToWait: [], movedToFailed: [] });

    await client.del(s.keys.stalledCheck);
    expect(await sweep()).toEqual({ movedToWait: [{ jobId: lapsed.jobId, stalledCount: 1 }], movedToFailed: [] });
    expect(await client.lrange(s.keys.wait, '0', '-1')).toEqual([lapsed.jobId]);
    expect(await client.lrange(s.keys.active, '0', '-1')).toEqual([held.jobId]);
    expect(await client.smembers(s.keys.stalled)).toEqual([held.jobId]);

    // Picked up again and lapsed again: stc 2 > maxStalledCount 1, so it fails for good.
    const again = await pickup(s.scripts);
    expect(again.pickup.job?.id).toBe(lapsed.jobId);
    await client.del(s.keys.stalledCheck);
    await sweep();
    await client.del(s.keys.lock(lapsed.jobId), s.keys.stalledCheck);
    expect(await sweep()).toEqual({ movedToWait: [], movedToFailed: [{ jobId: lapsed.jobId, stalledCount: 2 }] });
    expect(await client.zrange(s.keys.failed, '0', '-1')).toEqual([lapsed.jobId]);
    expect(await client.hget(s.keys.job(lapsed.jobId), 'failedReason')).toBe('job stalled more than allowable limit');
    const names = (await client.xrange(s.keys.events, '-', '+')).map(([, f]) => f[1]);
    expect(names.filter((n) => n === 'stalled')).toHaveLength(2);
    expect(names.at(-1)).toBe('failed');
  });

  it('a job renewed between the sweeps does not stall; a paused queue gets it in paused', async () => {
    const s = scriptsFor(client);
    const renewed = await activeJob(s);
    const lapsed = await activeJob(s);
    await s.scripts.moveStalledJobsToWait(1, Date.now(), 60_000);
    expect(await s.scripts.extendLock(renewed.jobId, renewed.token, 30_000)).toBe(true);
    await client.del(s.keys.lock(lapsed.jobId), s.keys.stalledCheck);
    await s.admin.pause('pause');
    const result = await s.scripts.moveStalledJobsToWait(1, Date.now(), 60_000);
    expect(result.movedToWait.map((m) => m.jobId)).toEqual([lapsed.jobId]);
    expect(await client.lrange(s.keys.paused, '0', '-1')).toEqual([lapsed.jobId]);
    expect(await client.llen(s.keys.wait)).toBe(0);
  });
});

describe('pause-6', () => {
  it('moves wait to paused and back in order, reports whether the state changed, wakes a worker', async () => {
    const { keys, scripts, admin } = scriptsFor(client);
    for (let i = 0; i < 3; i++) await scripts.addJob(newJob());
    expect(await admin.pause('pause')).toBe(true);
    expect(await admin.pause('pause')).toBe(false);
    expect(await client.hget(keys.meta, 'paused')).toBe('1');
    expect(await client.lrange(keys.paused, '0', '-1')).toEqual(['3', '2', '1']);
    expect(await client.exists(keys.wait)).toBe(0);
    await scripts.addJob(newJob());
    await client.del(keys.marker);
    expect(await admin.pause('resume')).toBe(true);
    expect(await admin.pause('resume')).toBe(false);
    expect(await client.hexists(keys.meta, 'paused')).toBe(0);
    expect(await client.zcard(keys.marker)).toBe(1);
    expect(await pickAll(scripts)).toEqual(['1', '2', '3', '4']);
  });
});

describe('updateProgress-2 and addLog-2', () => {
  it('store progress with an event, append and trim logs, and answer -1 for a missing job', async () => {
    const { keys, scripts, control } = scriptsFor(client);
    const { jobId } = await scripts.addJob(newJob());
    await control.updateProgress(jobId, '{"pct":50}');
    expect(await client.hget(keys.job(jobId), 'progress')).toBe('{"pct":50}');
    const last = await client.xrevrange(keys.events, '+', '-', 'COUNT', 1);
    expect(last[0][1]).toEqual(['event', 'progress', 'jobId', jobId, 'data', '{"pct":50}']);

    expect(await control.addLog(jobId, 'one', 2)).toBe(1);
    expect(await control.addLog(jobId, 'two', 2)).toBe(2);
    expect(await control.addLog(jobId, 'three', 2)).toBe(2);
    expect(await client.lrange(keys.logs(jobId), '0', '-1')).toEqual(['two', 'three']);

    const before = await snapshot(client, keys);
    expect((await rejection(control.updateProgress('ghost', '1'))).code).toBe(-1);
    expect((await rejection(control.addLog('ghost', 'x', 0))).code).toBe(-1);
    expect(await snapshot(client, keys)).toEqual(before);
  });
});

describe('removeJob-14', () => {
  it('removes a job from any state with its logs, refuses a locked one, answers missing', async () => {
    const s = scriptsFor(client);
    const { jobId: waiting } = await s.scripts.addJob(newJob());
    await s.control.addLog(waiting, 'line', 0);
    const { jobId: delayed } = await s.scripts.addJob(newJob({ delay: 60_000 }));
    expect((await s.control.removeJob(waiting)).outcome).toBe('removed');
    expect((await s.control.removeJob(delayed)).outcome).toBe('removed');
    expect(await client.exists(s.keys.job(waiting), s.keys.logs(waiting), s.keys.job(delayed))).toBe(0);
    expect(await client.zcard(s.keys.delayed)).toBe(0);
    expect((await s.control.removeJob(waiting)).outcome).toBe('missing');

    const active = await activeJob(s);
    const before = await snapshot(client, s.keys);
    expect((await s.control.removeJob(active.jobId)).outcome).toBe('locked');
    expect(await snapshot(client, s.keys)).toEqual(before);
  });
});

describe('reprocessJob-9', () => {
  it('sends a failed job back to wait with attempts reset and ats kept; -1 and -3 otherwise', async () => {
    const s = scriptsFor(client);
    const { keys, scripts, jobId, token, control } = await activeJob(s);
    await scripts.moveToFinished(finish(jobId, token, { outcome: 'failed', value: 'bad', stacktrace: '[]' }));
    expect((await rejection(control.reprocessJob(jobId, 'completed'))).code).toBe(-3);
    await control.reprocessJob(jobId, 'failed');
    expect(await client.lrange(keys.wait, '0', '-1')).toEqual([jobId]);
    expect(await client.zcard(keys.failed)).toBe(0);
    expect(await client.hmget(keys.job(jobId), 'atm', 'ats', 'failedReason', 'finishedOn')).toEqual(['0', '1', null, null]);
    expect((await rejection(control.reprocessJob('ghost', 'failed'))).code).toBe(-1);
  });
});

describe('cleanJobsInSet-2', () => {
  it('removes jobs older than the cut-off up to the limit, never a locked one', async () => {
    const s = scriptsFor(client);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const job = await activeJob(s);
      await s.scripts.moveToFinished(finish(job.jobId, job.token, { timestamp: 1000 + i }));
      ids.push(job.jobId);
    }
    expect(await s.admin.cleanJobsInSet('completed', 1001, 1)).toEqual({ removed: [ids[0]], nextRank: 0 });
    expect(await s.admin.cleanJobsInSet('completed', 1001, 0)).toEqual({ removed: [ids[1]], nextRank: -1 });
    expect(await client.zrange(s.keys.completed, '0', '-1')).toEqual([ids[2]]);
    expect(await client.exists(s.keys.job(ids[0]), s.keys.job(ids[1]))).toBe(0);
    const cleaned = (await client.xrange(s.keys.events, '-', '+')).filter(([, f]) => f[1] === 'cleaned');
    expect(cleaned.map(([, f]) => f)).toEqual([['event', 'cleaned', 'jobId', '', 'count', '1'], ['event', 'cleaned', 'jobId', '', 'count', '1']]);

    const active = await activeJob(s);
    expect(await s.admin.cleanJobsInSet('active', Date.now() + 1000, 0)).toEqual({ removed: [], nextRank: -1 });
    await client.del(s.keys.lock(active.jobId));
    expect(await s.admin.cleanJobsInSet('active', Date.now() + 1000, 0)).toEqual({ removed: [active.jobId], nextRank: -1 });
    expect(await client.llen(s.keys.active)).toBe(0);
  });

  it('reads one window of 500 ids a call: kept ids stay before the next rank; a list loses only the removed ids', async () => {
    const s = scriptsFor(client);
    await s.scripts.addJobs(Array.from({ length: 1200 }, (_, i) => newJob({ timestamp: i % 2 === 0 ? 1000 : Date.now() })));
    const before = await client.lrange(s.keys.wait, '0', '-1'); // left end first: 1200 ... 1
    const old = (id: string) => Number(id) % 2 === 1; // ids 1, 3, 5, ...: added with timestamp 1000
    const first = await s.admin.cleanJobsInSet('wait', 1000, 0);
    expect(first.removed).toEqual(before.slice(0, 500).filter(old));
    expect(first.nextRank).toBe(250);
    const second = await s.admin.cleanJobsInSet('wait', 1000, 0, first.nextRank);
    expect(second.removed).toEqual(before.slice(500, 1000).filter(old));
    expect(second.nextRank).toBe(500);
    const third = await s.admin.cleanJobsInSet('wait', 1000, 0, second.nextRank);
    expect(third).toEqual({ removed: before.slice(1000).filter(old), nextRank: -1 });
    expect(await client.lrange(s.keys.wait, '0', '-1')).toEqual(before.filter((id) => !old(id)));
    expect(await client.exists(s.keys.job('1'), s.keys.job('1199'))).toBe(0);
    expect(await client.exists(s.keys.job('2'))).toBe(1);

    // The limit stops a window half-way; the next rank is past the ids looked at.
    const z = scriptsFor(client);
    await client.zadd(z.keys.delayed, ...Array.from({ length: 10 }, (_, i) => [i, `d${i}`]).flat());
    expect(await z.admin.cleanJobsInSet('delayed', Date.now(), 3)).toEqual({ removed: ['d0', 'd1', 'd2'], nextRank: 0 });
    expect(await client.zcard(z.keys.delayed)).toBe(7);
  });
});

describe('drain-5', () => {
  it('removes waiting, paused and prioritized jobs (delayed only when asked), keeps active ones', async () => {
    const s = scriptsFor(client);
    const active = await activeJob(s);
    await s.scripts.addJob(newJob());
    await s.scripts.addJob(newJob({ priority: 2 }));
    const { jobId: delayed } = await s.scripts.addJob(newJob({ delay: 60_000 }));
    expect(await s.admin.drain(false)).toBe(0);
    expect(await client.exists(s.keys.wait, s.keys.prioritized, s.keys.job('2'), s.keys.job('3'))).toBe(0);
    expect(await client.zrange(s.keys.delayed, '0', '-1')).toEqual([delayed]);
    expect(await s.admin.drain(true)).toBe(0);
    expect(await client.exists(s.keys.delayed, s.keys.job(delayed))).toBe(0);
    expect(await client.lrange(s.keys.active, '0', '-1')).toEqual([active.jobId]);
  });

  it('works in batches of 1000 and reports what is left', async () => {
    const s = scriptsFor(client);
    await s.scripts.addJobs(Array.from({ length: 1200 }, () => newJob()));
    expect(await s.admin.drain(false)).toBe(200);
    expect(await s.admin.drain(false)).toBe(0);
    expect(await client.exists(s.keys.wait)).toBe(0);
  });
});

describe('obliterate-2', () => {
  it('refuses with -3 while jobs are active (nothing deleted); with force deletes every key', async () => {
    const s = scriptsFor(client);
    await activeJob(s);
    await s.scripts.addJob(newJob({ delay: 60_000 }));
    await s.control.addLog('2', 'x', 0);
    const before = await snapshot(client, s.keys);
    expect(await s.admin.obliterate(false)).toBe(-3);
    expect(await snapshot(client, s.keys)).toEqual(before);
    expect(await s.admin.obliterate(true)).toBe(1);
    expect(await snapshot(client, s.keys)).toEqual({});
  });

  it('works in batches: 0 while more is left, 1 when all is gone', async () => {
    const s = scriptsFor(client);
    await s.scripts.addJobs(Array.from({ length: 1500 }, () => newJob()));
    expect(await s.admin.obliterate(false)).toBe(0);
    expect(await client.llen(s.keys.wait)).toBe(500);
    expect(await client.hget(s.keys.meta, 'paused')).toBe('1');
    expect(await s.admin.obliterate(false)).toBe(1);
    expect(await snapshot(client, s.keys)).toEqual({});
  });
});

describe('finishJobs-13: a retried job (a failed attempt with attempts left, as retryJob-12 takes it)', () => {
  async function activeJobs(s: ReturnType<typeof scriptsFor>, overrides: Array<Record<string, unknown>>) {
    const jobs: Array<{ jobId: string; token: string }> = [];
    for (const o of overrides) {
      const { jobId } = await s.scripts.addJob(newJob(o));
      const { pickup: taken, token } = await pickup(s.scripts);
      expect(taken.job?.id).toBe(jobId);
      jobs.push({ jobId, token });
    }
    return jobs;
  }
  const retried = (jobId: string, token: string, extra = {}) =>
    finish(jobId, token, { outcome: 'retried' as const, value: 'boom', stacktrace: '["at a"]', ...extra });
  const next = () => ({ next: { token: uuid(), lockDuration: 20_000 } });

  it('goes back to wait after the pickups, so its own fetch-next takes the next job, never itself', async () => {
    const s = scriptsFor(client);
    const { keys, scripts } = s;
    const [a, b] = await activeJobs(s, [{}, {}]);
    await client.sadd(keys.stalled, a.jobId);
    await scripts.addJob(newJob()); // id 3: one ready job for two fetch-nexts
    await client.del(keys.marker);
    const results = await scripts.finishJobs([retried(a.jobId, a.token, next()), finish(b.jobId, b.token, next())], Date.now(), 20_000);
    expect(results.map((r) => ('job' in r ? r.job?.id : r))).toEqual(['3', undefined]);
    expect(await client.lrange(keys.wait, '0', '-1')).toEqual([a.jobId]);
    expect(await client.lrange(keys.active, '0', '-1')).toEqual(['3']);
    expect(await client.hmget(keys.job(a.jobId), 'atm', 'failedReason', 'stacktrace', 'finishedOn')).toEqual(['1', 'boom', '["at a"]', null]);
    expect(await client.exists(keys.lock(a.jobId))).toBe(0);
    expect(await client.sismember(keys.stalled, a.jobId)).toBe(0);
    expect(await client.zscore(keys.marker, '0')).toBe('0');
    expect(await client.zcard(keys.failed)).toBe(0);
    const events = (await client.xrange(keys.events, '-', '+')).map(([, f]) => f.join(' '));
    expect(events.slice(-3)).toEqual([`event completed jobId ${b.jobId} returnvalue "ok"`, 'event active jobId 3',
      `event waiting jobId ${a.jobId} prev failed failedReason boom`]);
  });

  it('with a delay goes to delayed at its finishedOn + delay, and the marker learns when; alone it is a batch of one', async () => {
    const s = scriptsFor(client);
    const { keys, scripts } = s;
    const [a] = await activeJobs(s, [{}]);
    const at = Date.now();
    const [result] = await scripts.finishJobs([retried(a.jobId, a.token, { timestamp: at, retryDelayMs: 5000, ...next() })], Date.now(), 20_000);
    expect('job' in result && result.job).toBeUndefined();
    expect(await client.zscore(keys.delayed, a.jobId)).toBe(String(at + 5000));
    expect(await client.zscore(keys.marker, '1')).toBe(String(at + 5000));
    expect(await client.llen(keys.wait)).toBe(0);
    const [, fields] = (await client.xrevrange(keys.events, '+', '-', 'COUNT', 1))[0];
    expect(fields).toEqual(['event', 'delayed', 'jobId', a.jobId, 'delay', String(at + 5000), 'failedReason', 'boom']);
  });

  it('with a priority goes to prioritized; on a paused queue, to paused', async () => {
    const s = scriptsFor(client);
    const { keys, scripts } = s;
    const [a] = await activeJobs(s, [{ priority: 3 }]);
    await scripts.finishJobs([retried(a.jobId, a.token)], Date.now(), 20_000);
    expect(await client.zrange(keys.prioritized, '0', '-1')).toEqual([a.jobId]);

    const p = scriptsFor(client);
    const [b] = await activeJobs(p, [{}]);
    await p.admin.pause('pause');
    await p.scripts.finishJobs([retried(b.jobId, b.token)], Date.now(), 20_000);
    expect(await client.lrange(p.keys.paused, '0', '-1')).toEqual([b.jobId]);
    expect(await client.llen(p.keys.wait)).toBe(0);
  });

  it('refused (-6 another token, -2 no lock) changes nothing and takes no next job; moveToFinished-14 takes none', async () => {
    const s = scriptsFor(client);
    const { keys, scripts } = s;
    const [a, b] = await activeJobs(s, [{}, {}]);
    await client.del(keys.lock(b.jobId));
    await scripts.addJob(newJob());
    const before = await snapshot(client, keys);
    const results = await scripts.finishJobs([retried(a.jobId, uuid(), next()), retried(b.jobId, b.token, next())], Date.now(), 20_000);
    expect(results.map((r) => (r instanceof EchoMQError ? r.code : r))).toEqual([-6, -2]);
    expect(await snapshot(client, keys)).toEqual(before);
    await expect(scripts.moveToFinished(retried(a.jobId, a.token))).rejects.toThrow('moveToFinished-14 takes no retry');
  });
});
