import { afterAll, afterEach, describe, expect, it, jest } from '@jest/globals';
import { randomUUID as uuid } from 'node:crypto';
import { EchoMQOptionError, Queue, QueueEvents, type Job, type JobOptions, type QueueEventsListeners } from '../lib/index.js';
import { SCRIPTS, Script, Scripts } from '../lib/internal.js';
import { partitionOf } from '../lib/protocol/partitions.js';
import { eventually, newClient, queueKeys, testConnection, uniqueQueueName } from './support/redis.js';
import { snapshot } from './support/scripts.js';
import { Harness } from './support/workers.js';

// Deduplication (docs/deduplication.md): opts.deduplication on add, in its three modes, against a real Redis.
const client = newClient();
const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (closers.length) await closers.pop()!();
});
afterAll(() => client.quit());

function queue(name = uniqueQueueName('dedup'), partitions?: number): Queue {
  const q = new Queue(name, { connection: testConnection(), partitions });
  closers.push(async () => {
    await q.obliterate({ force: true });
    await q.close();
  });
  return q;
}

function harness(): Harness {
  const h = new Harness();
  closers.push(async () => {
    await h.close();
    const q = new Queue(h.name, { connection: testConnection() });
    await q.obliterate({ force: true });
    await q.close();
  });
  return h;
}

/** A QueueEvents of the queue, ready, with every `deduplicated` and `removed` event it reads. */
async function listen(name: string, partitions?: number) {
  const events = new QueueEvents(name, { connection: testConnection(), partitions });
  closers.push(() => events.close());
  await events.waitUntilReady();
  const deduplicated: Array<QueueEventsListeners['deduplicated'][0]> = [];
  const removed: Array<QueueEventsListeners['removed'][0]> = [];
  events.on('deduplicated', (args) => deduplicated.push(args));
  events.on('removed', (args) => removed.push(args));
  return { deduplicated, removed };
}

/** How many jobs the queue holds, in every state. */
async function jobCount(q: Queue): Promise<number> {
  const counts = await q.getJobCounts();
  return Object.values(counts).reduce((sum, n) => sum + (n ?? 0), 0);
}

/** The queue's keys and their contents, with the events stream left out (an event is the one write a dropped add makes). */
async function stateWithoutEvents(q: Queue): Promise<Record<string, unknown>> {
  const state = await snapshot(client, q.keys);
  delete state[q.keys.events];
  return state;
}

describe('simple mode (no ttl)', () => {
  it('drops an add while the first job has not finished: add returns that job, nothing is written but the event', async () => {
    const q = queue();
    const seen = await listen(q.name);
    const first = await q.add('paint', { color: 'white' }, { deduplication: { id: 'house' } });
    expect(first.deduplicationId).toBe('house');
    const before = await stateWithoutEvents(q);
    const eventsBefore = await client.xlen(q.keys.events);

    const second = await q.add('paint', { color: 'red' }, { deduplication: { id: 'house' } });
    const third = await q.add('paint', { color: 'blue' }, { jobId: 'paint-3', deduplication: { id: 'house' } });

    for (const kept of [second, third]) {
      expect([kept.id, kept.data, kept.deduplicationId]).toEqual([first.id, { color: 'white' }, 'house']);
    }
    expect(await stateWithoutEvents(q)).toEqual(before); // the id counter included: a dropped add takes no id
    expect(await client.xlen(q.keys.events)).toBe(eventsBefore + 2);
    expect(await q.getJob('paint-3')).toBeUndefined();
    await eventually(() => seen.deduplicated.length === 2, 5000, 'the deduplicated events');
    expect(seen.deduplicated).toEqual([
      { jobId: first.id, deduplicationId: 'house' }, // a dropped add without a custom id has no id to name
      { jobId: first.id, deduplicationId: 'house', deduplicatedJobId: 'paint-3' },
    ]);
    expect(await client.get(q.keys.deduplication('house'))).toBe(first.id);
    expect(await q.getDeduplicationJobId('house')).toBe(first.id);
  });

  it('frees the id once the job completed, failed, or completed and was removed (removeOnComplete)', async () => {
    const h = harness();
    const done: string[] = [];
    const worker = h.worker(async (job) => {
      if ((job.data as { fail?: boolean }).fail) throw new Error('no paint');
      return 'ok';
    });
    worker.on('completed', (job) => done.push(job.id));
    worker.on('failed', (job) => { if (job) done.push(job.id); });

    for (const opts of [{}, { removeOnComplete: true }, { removeOnFail: true }] as JobOptions[]) {
      const fail = opts.removeOnFail !== undefined;
      const first = await h.queue.add('paint', { fail }, { ...opts, deduplication: { id: 'house' } });
      await eventually(() => done.includes(first.id), 5000, `job ${first.id} to finish`);
      const next = await h.queue.add('paint', { fail }, { ...opts, deduplication: { id: 'house' } });
      expect(next.id).not.toBe(first.id);
      await eventually(() => done.includes(next.id), 5000, `job ${next.id} to finish`);
    }
    const failedFirst = await h.queue.add('paint', { fail: true }, { deduplication: { id: 'porch' } });
    await eventually(() => done.includes(failedFirst.id), 5000, 'the failure');
    expect(await (await h.queue.getJob(failedFirst.id))?.getState()).toBe('failed');
    expect((await h.queue.add('paint', {}, { deduplication: { id: 'porch' } })).id).not.toBe(failedFirst.id);
    expect(h.errors).toEqual([]);
  });

  it('is right without the worker deleting the key: a finished job frees its id though its key is still there', async () => {
    const q = queue();
    const first = await q.add('paint', {}, { deduplication: { id: 'house' } });
    // Finished as any runtime's moveToFinished-14 would leave it (no worker of ours to delete the key).
    const part = q.partitionKeys[0];
    const token = uuid();
    const s = new Scripts(client, part, 1000);
    const { job } = await s.moveToActive(token, 30_000, Date.now());
    expect(job?.id).toBe(first.id);
    expect(await q.add('paint', {}, { deduplication: { id: 'house' } })).toMatchObject({ id: first.id }); // active: still held
    await s.moveToFinished({ jobId: first.id, token, timestamp: Date.now(), outcome: 'completed', value: '1', stacktrace: '', keepCount: -1, keepAgeMs: 0 });
    expect(await client.get(part.deduplication('house'))).toBe(first.id);
    expect(await q.getDeduplicationJobId('house')).toBeNull();
    const next = await q.add('paint', {}, { deduplication: { id: 'house' } });
    expect(next.id).not.toBe(first.id);
    expect(await client.get(part.deduplication('house'))).toBe(next.id);
  });

  it('the worker deletes the key of a finished job (it would stay until an add reused it)', async () => {
    const h = harness();
    const worker = h.worker(async () => 'ok');
    const completed = new Promise<Job>((resolve) => worker.once('completed', resolve));
    const job = await h.queue.add('paint', {}, { deduplication: { id: 'house' } });
    expect((await completed).id).toBe(job.id);
    await eventually(async () => (await client.exists(h.queue.keys.deduplication('house'))) === 0, 5000, 'the key to go');
  });

  it('job.remove(), drain and clean free the simple-mode id their job held; a throttle key stays its ttl', async () => {
    const q = queue();
    const removed = await q.add('paint', {}, { deduplication: { id: 'by-remove' } });
    await q.add('paint', {}, { deduplication: { id: 'by-drain' } });
    await q.add('paint', {}, { deduplication: { id: 'throttled', ttl: 60_000 } });
    await removed.remove();
    expect(await client.exists(q.keys.deduplication('by-remove'))).toBe(0);
    await q.drain();
    expect(await client.exists(q.keys.deduplication('by-drain'))).toBe(0);
    expect(await client.exists(q.keys.deduplication('throttled'))).toBe(1);
    await q.add('paint', {}, { deduplication: { id: 'by-clean' } });
    expect(await q.clean(0, 0, 'wait')).toHaveLength(1);
    expect(await client.exists(q.keys.deduplication('by-clean'))).toBe(0);
  });

  it('a recycled custom id holds nothing: the job must carry the deduplication id (deid)', async () => {
    const q = queue();
    const first = await q.add('paint', {}, { jobId: 'order-1', deduplication: { id: 'house' } });
    await first.remove();
    expect(await client.exists(q.keys.deduplication('house'))).toBe(0); // the removal freed it
    // A key left naming the id (by a worker given up right after a finish that removed its job):
    await client.set(q.keys.deduplication('house'), 'order-1');
    await q.add('paint', {}, { jobId: 'order-1' }); // same id, no deduplication
    const next = await q.add('paint', {}, { deduplication: { id: 'house' } });
    expect(next.id).not.toBe('order-1');
  });
});

describe('throttle mode (ttl)', () => {
  it('drops adds for ttl ms after the first, whatever became of the job, then adds again', async () => {
    const h = harness();
    const worker = h.worker(async () => 'ok');
    const completed = new Promise<Job>((resolve) => worker.once('completed', resolve));
    const first = await h.queue.add('ping', { n: 1 }, { removeOnComplete: true, deduplication: { id: 'ping', ttl: 1500 } });
    await completed;
    await eventually(async () => (await h.queue.getJob(first.id)) === undefined, 5000, 'the job to be removed');
    // Completed and removed, and still held: add answers a Job of the holder's id, built from this add.
    const dropped = await h.queue.add('ping', { n: 2 }, { deduplication: { id: 'ping', ttl: 1500 } });
    expect([dropped.id, dropped.data]).toEqual([first.id, { n: 2 }]);
    expect(await dropped.getState()).toBe('unknown');
    await eventually(async () => (await client.exists(h.queue.keys.deduplication('ping'))) === 0, 5000, 'the ttl to run out');
    const again = await h.queue.add('ping', { n: 3 }, { deduplication: { id: 'ping', ttl: 1500 } });
    expect(again.id).not.toBe(first.id);
  });

  it('extend starts the ttl again at each dropped add; without extend it runs on', async () => {
    const q = queue();
    const key = q.keys.deduplication('ping');
    const first = await q.add('ping', {}, { deduplication: { id: 'ping', ttl: 60_000 } });
    await client.pexpire(key, 10_000); // as if 50 s had passed
    await q.add('ping', {}, { deduplication: { id: 'ping', ttl: 60_000 } });
    expect(await client.pttl(key)).toBeLessThanOrEqual(10_000);
    await q.add('ping', {}, { deduplication: { id: 'ping', ttl: 60_000, extend: true } });
    expect(await client.pttl(key)).toBeGreaterThan(10_000);
    expect(await client.get(key)).toBe(first.id);
    expect(await jobCount(q)).toBe(1);
  });
});

describe('debounce mode (ttl with replace)', () => {
  it('replace keeps the newest data in the delayed job: each add removes the delayed one and takes its place', async () => {
    const q = queue();
    const seen = await listen(q.name);
    const dedup = { id: 'save', ttl: 60_000, extend: true, replace: true };
    const added: Job[] = [];
    for (let i = 1; i <= 5; i++) added.push(await q.add('save', { draft: i }, { delay: 60_000, deduplication: dedup }));
    const last = added.at(-1)!;
    expect(await q.getJobs('delayed')).toMatchObject([{ id: last.id, data: { draft: 5 } }]);
    expect(await jobCount(q)).toBe(1);
    expect(await q.getDeduplicationJobId('save')).toBe(last.id);
    for (const job of added.slice(0, -1)) expect(await q.getJob(job.id)).toBeUndefined();
    await eventually(() => seen.deduplicated.length === 4 && seen.removed.length === 4, 5000, 'the events');
    expect(seen.deduplicated).toEqual(added.slice(1).map((job, i) => ({ jobId: job.id, deduplicationId: 'save', deduplicatedJobId: added[i].id })));
    expect(seen.removed).toEqual(added.slice(0, -1).map((job) => ({ jobId: job.id, reason: 'replaced by deduplication' })));
  });

  it('replace without extend keeps the ttl running; a job no longer delayed is kept, as without replace', async () => {
    const q = queue();
    const key = q.keys.deduplication('save');
    await q.add('save', { draft: 1 }, { delay: 60_000, deduplication: { id: 'save', ttl: 60_000, replace: true } });
    await client.pexpire(key, 10_000);
    const second = await q.add('save', { draft: 2 }, { delay: 60_000, deduplication: { id: 'save', ttl: 60_000, replace: true } });
    expect(await client.pttl(key)).toBeLessThanOrEqual(10_000);
    expect(await client.get(key)).toBe(second.id);

    const waiting = await q.add('now', { v: 1 }, { deduplication: { id: 'now', ttl: 60_000, replace: true } });
    const kept = await q.add('now', { v: 2 }, { deduplication: { id: 'now', ttl: 60_000, replace: true } });
    expect([kept.id, kept.data]).toEqual([waiting.id, { v: 1 }]);
    expect(await jobCount(q)).toBe(2);
  });
});

describe('concurrent producers', () => {
  /** 8 Queue instances add at once, each: three jobs of one deduplication id each, and one plain job. */
  async function race(dedup: (id: string) => JobOptions, opts: JobOptions = {}) {
    const name = uniqueQueueName('dedup');
    const producers = Array.from({ length: 8 }, () => queue(name));
    const added = await Promise.all(producers.map((q, p) => Promise.all([
      ...['a', 'b', 'c'].map((id) => q.add('race', { producer: p, id }, { ...opts, ...dedup(id) })),
      q.add('plain', { producer: p }),
    ])));
    return { q: producers[0], added };
  }

  it.each([
    ['simple', (id: string) => ({ deduplication: { id } })],
    ['throttle', (id: string) => ({ deduplication: { id, ttl: 60_000 } })],
    ['throttle with extend', (id: string) => ({ deduplication: { id, ttl: 60_000, extend: true } })],
  ])('%s: one job per id, and every add of an id returns that job', async (_mode, dedup) => {
    const { q, added } = await race(dedup);
    expect(await jobCount(q)).toBe(3 + 8);
    for (const [i, id] of ['a', 'b', 'c'].entries()) {
      const returned = added.map((jobs) => jobs[i]);
      const holder = await q.getDeduplicationJobId(id);
      expect(new Set(returned.map((job) => job.id))).toEqual(new Set([holder]));
      const stored = await q.getJob(holder!);
      for (const job of returned) expect(job.data).toEqual(stored?.data); // the kept job, read back
    }
  });

  it('debounce (replace, delayed): one job per id, holding the data of the add that returned it', async () => {
    const { q, added } = await race((id) => ({ deduplication: { id, ttl: 60_000, extend: true, replace: true } }), { delay: 60_000 });
    expect(await jobCount(q)).toBe(3 + 8);
    for (const [i, id] of ['a', 'b', 'c'].entries()) {
      const holder = await q.getDeduplicationJobId(id);
      const stored = await q.getJob(holder!);
      const returnedAs = added.map((jobs) => jobs[i]).filter((job) => job.id === holder);
      expect(returnedAs).toHaveLength(1);
      expect(stored?.data).toEqual(returnedAs[0].data);
      expect(await stored?.getState()).toBe('delayed');
    }
  });

  it('addBulk: two adds of one id in a batch are one job; replace in a batch keeps the later', async () => {
    const q = queue();
    const jobs = await q.addBulk([
      { name: 'x', data: { n: 1 }, opts: { deduplication: { id: 'x' } } },
      { name: 'p', data: { n: 2 } },
      { name: 'x', data: { n: 3 }, opts: { deduplication: { id: 'x' } } },
      { name: 'y', data: { n: 4 }, opts: { delay: 60_000, deduplication: { id: 'y', ttl: 60_000, replace: true } } },
      { name: 'y', data: { n: 5 }, opts: { delay: 60_000, deduplication: { id: 'y', ttl: 60_000, replace: true } } },
    ]);
    expect(jobs[2].id).toBe(jobs[0].id);
    expect(jobs[2].data).toEqual({ n: 1 });
    expect(jobs[4].id).not.toBe(jobs[3].id);
    expect(await q.getJob(jobs[3].id)).toBeUndefined();
    expect((await q.getJob(jobs[4].id))?.data).toEqual({ n: 5 });
    expect(await jobCount(q)).toBe(3);
  });
});

describe('getDeduplicationJobId and removeDeduplicationKey', () => {
  it('name the holder, and free the id at once (the job stays); removeDeduplicationKey answers how many keys it deleted', async () => {
    const q = queue();
    expect(await q.getDeduplicationJobId('house')).toBeNull();
    const first = await q.add('paint', {}, { deduplication: { id: 'house', ttl: 60_000 } });
    expect(await q.getDeduplicationJobId('house')).toBe(first.id);
    expect(await q.removeDeduplicationKey('house')).toBe(1);
    expect(await q.removeDeduplicationKey('house')).toBe(0);
    expect(await q.getDeduplicationJobId('house')).toBeNull();
    const second = await q.add('paint', {}, { deduplication: { id: 'house', ttl: 60_000 } });
    expect(second.id).not.toBe(first.id);
    expect(await jobCount(q)).toBe(2);
  });

  it('obliterate deletes the deduplication keys too', async () => {
    const name = uniqueQueueName('dedup');
    const q = new Queue(name, { connection: testConnection() });
    closers.push(() => q.close());
    await q.add('paint', {}, { deduplication: { id: 'house' } });
    await q.add('paint', {}, { deduplication: { id: 'a:b*[c]', ttl: 60_000 } });
    await q.obliterate({ force: true });
    expect(await queueKeys(client, name)).toEqual([]);
  });
});

describe('a partitioned queue', () => {
  it('routes by deduplication id (before jobId), so adds of one id meet in one partition', async () => {
    const name = uniqueQueueName('dedup');
    const producers = [queue(name, 4), queue(name, 4), queue(name, 4)];
    const added = await Promise.all(producers.flatMap((q, p) => [0, 1].map((n) => q.add('x', { p, n }, { jobId: `job-${p}-${n}`, deduplication: { id: 'house' } }))));
    expect(new Set(added.map((job) => job.id)).size).toBe(1);
    const q = producers[0];
    expect(await jobCount(q)).toBe(1);
    const holder = added[0].id;
    expect(await q.getDeduplicationJobId('house')).toBe(holder);
    expect(await client.get(q.partitionKeys[partitionOf('house', 4)].deduplication('house'))).toBe(holder);
    expect((await q.getJob(holder))?.id).toBe(holder);
    expect(await q.removeDeduplicationKey('house')).toBe(1);
  });

  it('with a partitionKey the key is in that key\'s partition, and getDeduplicationJobId finds it there', async () => {
    const q = queue(uniqueQueueName('dedup'), 4);
    let partitionKey = 'customer-0';
    for (let i = 1; partitionOf(partitionKey, 4) === partitionOf('house', 4); i++) partitionKey = `customer-${i}`;
    const first = await q.add('x', {}, { partitionKey, deduplication: { id: 'house' } });
    expect((await q.add('x', {}, { partitionKey, deduplication: { id: 'house' } })).id).toBe(first.id);
    expect(await q.getDeduplicationJobId('house')).toBe(first.id);
  });
});

describe('the call a plain add sends is unchanged', () => {
  afterEach(() => {
    jest.restoreAllMocks();
  });

  it('add: addJob-9 with the ten ARGV it always had; with deduplication, ARGV[11..15]', async () => {
    const q = queue();
    const run = jest.spyOn(SCRIPTS.addJob, 'run');
    const k = q.keys;
    const addKeys = [k.wait, k.paused, k.meta, k.id, k.delayed, k.prioritized, k.pc, k.marker, k.events];
    const plain = await q.add('plain', { a: 1 });
    expect(run.mock.calls[0].slice(1)).toEqual([addKeys, [k.base, '', 'plain', '{"a":1}', '{}', plain.timestamp, 0, 0, '0', 10_000]]);
    await q.add('again', {}, { jobId: 'j-1', delay: 5, priority: 2, lifo: true });
    expect(run.mock.calls[1][2]).toEqual([k.base, 'j-1', 'again', '{}', '{"delay":5,"priority":2,"lifo":true}', expect.any(Number), 5, 2, '1', 10_000]);
    await q.add('d', {}, { deduplication: { id: 'x', ttl: 100, extend: true } });
    expect(run.mock.calls[2][2].slice(10)).toEqual(['', 'x', 100, '1', '0']);
  });

  it('addBulk: addJobs-9 with 2 + 8 ARGV a job; a batch with a deduplicated job goes as addJobsDedup-9', async () => {
    const q = queue();
    const queued = jest.spyOn(Script.prototype, 'queue');
    const k = q.keys;
    const [a, b] = await q.addBulk([{ name: 'a', data: 1 }, { name: 'b', data: 2 }]);
    expect(queued.mock.instances[0]).toBe(SCRIPTS.addJobs);
    expect(queued.mock.calls[0][2]).toEqual([k.base, 10_000, '', 'a', '1', '{}', a.timestamp, 0, 0, '0', '', 'b', '2', '{}', b.timestamp, 0, 0, '0']);
    await q.addBulk([{ name: 'a', data: 1 }, { name: 'b', data: 2, opts: { deduplication: { id: 'x' } } }]);
    expect(queued.mock.instances[1]).toBe(SCRIPTS.addJobsDedup);
    expect(queued.mock.calls[1][2]).toHaveLength(3 + 2 * 12);
  });
});

describe('bad input', () => {
  it.each([
    ['not an object', { deduplication: 'house' }, /^add: opts\.deduplication$/, /must be an object/],
    ['an empty id', { deduplication: { id: '' } }, /^add: opts\.deduplication\.id$/, /non-empty string/],
    ['an id that is not a string', { deduplication: { id: 7 } }, /^add: opts\.deduplication\.id$/, /non-empty string/],
    ['an id over 400 characters', { deduplication: { id: 'x'.repeat(401) } }, /^add: opts\.deduplication\.id$/, /401 characters long; at most 400/],
    ['ttl 0', { deduplication: { id: 'x', ttl: 0 } }, /^add: opts\.deduplication\.ttl$/, /above 0/],
    ['a ttl not whole', { deduplication: { id: 'x', ttl: 1.5 } }, /^add: opts\.deduplication\.ttl$/, /whole number/],
    ['a ttl past a safe integer', { deduplication: { id: 'x', ttl: 2 ** 60 } }, /^add: opts\.deduplication\.ttl$/, /longest/],
    ['extend without ttl', { deduplication: { id: 'x', extend: true } }, /^add: opts\.deduplication\.extend$/, /needs a ttl/],
    ['replace not a boolean', { deduplication: { id: 'x', ttl: 5, replace: 'yes' } }, /^add: opts\.deduplication\.replace$/, /true or false/],
    ['an option BullMQ has and this runtime has not', { deduplication: { id: 'x', keepLastIfActive: true } }, /^add: opts\.deduplication\.keepLastIfActive$/, /not an option/],
    ['the job id de (deduplication keys are P:{Q}:de:<id>)', { jobId: 'de' }, /jobId/, /queue's own keys/],
  ])('%s is refused, naming the field, and nothing is written', async (_what, opts, field, message) => {
    const q = queue();
    const caught = await q.add('x', {}, opts as JobOptions).catch((error: unknown) => error);
    expect(caught).toBeInstanceOf(EchoMQOptionError);
    expect((caught as EchoMQOptionError).field).toMatch(field);
    expect((caught as Error).message).toMatch(message);
    const bulk = await q.addBulk([{ name: 'ok', data: {} }, { name: 'x', data: {}, opts: opts as JobOptions }]).catch((error: unknown) => error);
    expect(bulk).toBeInstanceOf(EchoMQOptionError);
    expect(await queueKeys(client, q.name)).toEqual([]);
  });

  it('refuses a default deduplication, a scheduler template with one, and bad ids to the lookups', async () => {
    expect(() => new Queue(uniqueQueueName('dedup'), { connection: testConnection(), defaultJobOptions: { deduplication: { id: 'x' } } }))
      .toThrow(/^defaultJobOptions\.deduplication: /);
    const q = queue();
    await expect(q.upsertJobScheduler('nightly', { every: 1000 }, { opts: { deduplication: { id: 'x' } } as never }))
      .rejects.toMatchObject({ field: 'template.opts.deduplication' });
    await expect(q.getDeduplicationJobId('')).rejects.toMatchObject({ field: 'deduplicationId' });
    await expect(q.removeDeduplicationKey(42 as unknown as string)).rejects.toMatchObject({ field: 'deduplicationId' });
    expect(await queueKeys(client, q.name)).toEqual([]);
  });
});
