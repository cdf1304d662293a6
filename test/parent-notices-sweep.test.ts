import { afterEach, describe, expect, it } from '@jest/globals';
import { FlowProducer, Worker } from '../lib/index.js';
import { FlowScripts } from '../lib/protocol/flow-scripts.js';
import { Keys } from '../lib/protocol/keys.js';
import { parseNotice } from '../lib/runtime/flows/notice.js';
import { ParentNotices } from '../lib/runtime/flows/parent-notices.js';
import { eventually, newClient, testConnection, uniqueQueueName } from './support/redis.js';

// The notices' sweep (docs/protocol.md, "Flows: recovery"): a notice left in a child's queue is
// delivered by the queue's workers; one that cannot be read is reported once and deleted, not
// read and refused by every sweep for ever.

const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (closers.length > 0) await closers.pop()!();
});

function redis() {
  const client = newClient();
  closers.push(async () => client.disconnect());
  return client;
}

const MINUTE_AGO = () => Date.now() - 60_000;

/** Stored notice-data that is no notice, each for its own reason. */
const BAD: Record<string, string> = {
  'not-json': '{"oops',
  'a-number': '5',
  'a-string': '"emq:{p}:1"',
  'json-null': 'null',
  'an-object': '{"parentKey":"emq:{p}:1","outcome":"completed"}',
  'fields-missing': '["emq:{p}:1","failed"]',
  'no-parent-key': '[null,"failed","broke",""]',
  'parent-key-not-text': '[7,"failed","broke",""]',
  'unknown-outcome': '["emq:{p}:1","done","1",""]',
  'value-not-text': '["emq:{p}:1","completed",{"v":1},""]',
  'unknown-policy': '["emq:{p}:1","failed","broke","retry"]',
};

/**
 * Data that Lua's cjson reads as a notice (its first four fields are one) and JSON.parse refuses:
 * cjson takes NaN, Infinity and hex numbers. The parsers disagree, so only bytes can decide.
 */
const LUA_ONLY: Record<string, string> = {
  nan: '["emq:{p}:1","failed","broke","",NaN]',
  infinity: '["emq:{p}:1","failed","broke","",-Infinity]',
  hex: '["emq:{p}:1","completed","1","",0x1F]',
};

async function plant(client: ReturnType<typeof redis>, keys: Keys, notices: Record<string, string | Buffer>, at = MINUTE_AGO()): Promise<void> {
  const multi = client.multi();
  for (const [childId, json] of Object.entries(notices)) multi.zadd(keys.notices, at, childId).hset(keys.noticeData, childId, json);
  await multi.exec();
}

describe('parseNotice', () => {
  it('reads [parentKey, outcome, value, policy], null fields as "", and answers null for anything else', () => {
    expect(parseNotice('c', '["emq:{p}:1","completed","{\\"v\\":1}",""]')).toEqual({ childId: 'c', parentKey: 'emq:{p}:1', outcome: 'completed', value: '{"v":1}', policy: '' });
    expect(parseNotice('c', '["emq:{p}:1","failed",null,null]')).toEqual({ childId: 'c', parentKey: 'emq:{p}:1', outcome: 'failed', value: '', policy: '' });
    expect(parseNotice('c', '["emq:{p}:1","failed","x","fail","a later field"]')).toMatchObject({ policy: 'fail' });
    for (const [name, json] of Object.entries(BAD)) expect({ name, parsed: parseNotice('c', json) }).toEqual({ name, parsed: null });
  });
});

describe('ackNotices-2', () => {
  it('deletes stored data that is no notice (valid JSON of another kind too), whatever it is asked; keeps a notice that says something else', async () => {
    const client = redis();
    const keys = new Keys(uniqueQueueName('children'), 'emq');
    const good = '["emq:{p}:1","completed","1",""]';
    await plant(client, keys, { ...BAD, good });
    const asked = [...Object.keys(BAD), 'good'].map((childId) => ({ childId, parentKey: 'emq:{p}:1', outcome: 'failed' as const, value: 'other', policy: '' as const }));
    await new FlowScripts(client, keys, 100).ackNotices(asked);
    expect(await client.hgetall(keys.noticeData)).toEqual({ good });
    expect([await client.zcard(keys.notices), await client.zscore(keys.notices, 'good')]).toEqual([1, expect.any(String)]);
  });
});

describe('ackNotices-2 of data read (parentKey "")', () => {
  it('deletes it only while HGET answers it byte for byte, whatever a parser makes of it', async () => {
    const client = redis();
    const keys = new Keys(uniqueQueueName('children'), 'emq');
    const newer = '["emq:{p}:1","completed","2",""]';
    await plant(client, keys, { ...LUA_ONLY, replaced: newer, bytes: Buffer.from([0x7b, 0xff, 0xfe]) });
    const scripts = new FlowScripts(client, keys, 100);
    await scripts.ackNotices([
      ...Object.entries(LUA_ONLY).map(([childId, stored]) => ({ childId, stored })),
      // Read before a newer notice replaced it: the newer one stays.
      { childId: 'replaced', stored: '["emq:{p}:1","completed","1",""]' },
      // Not UTF-8: as text it would never compare equal; as the bytes read, it does.
      { childId: 'bytes', stored: Buffer.from([0x7b, 0xff, 0xfe]) },
    ]);
    expect(await client.hgetall(keys.noticeData)).toEqual({ replaced: newer });
    expect(await client.zrange(keys.notices, '0', '-1')).toEqual(['replaced']);
  });
});

describe('the sweep of a notice that cannot be read', () => {
  it('data cjson reads as a notice and JSON.parse does not (NaN, Infinity, hex) is reported once and deleted', async () => {
    const client = redis();
    const keys = new Keys(uniqueQueueName('children'), 'emq');
    for (const json of Object.values(LUA_ONLY)) expect(parseNotice('c', json)).toBeNull();
    const errors: Error[] = [];
    const notices = new ParentNotices(client, keys, 100, (error) => errors.push(error), 0);
    // Bytes that are not UTF-8 too: unreadable, and readable (a notice whose value holds 0xff).
    const readableBytes = Buffer.concat([Buffer.from('["emq:{gone-parent}:1","failed","'), Buffer.from([0xff]), Buffer.from('",""]')]);
    await plant(client, keys, { ...LUA_ONLY, 'bad-bytes': Buffer.from([0x7b, 0xff]), 'readable-bytes': readableBytes });
    expect(await notices.sweep()).toBe(Object.keys(LUA_ONLY).length + 2);
    await notices.drain();
    expect(errors.map((e) => /notice of job (\S+) of queue/.exec(e.message)?.[1]).sort()).toEqual([...Object.keys(LUA_ONLY), 'bad-bytes'].sort());
    expect(await client.exists(keys.notices, keys.noticeData)).toBe(0);
    // The next sweep finds nothing: nothing reported again.
    expect(await notices.sweep()).toBe(0);
    expect(errors).toHaveLength(Object.keys(LUA_ONLY).length + 1);
  });


  it('reports each once and deletes it; the readable ones are delivered as before', async () => {
    const client = redis();
    const keys = new Keys(uniqueQueueName('children'), 'emq');
    const errors: Error[] = [];
    const notices = new ParentNotices(client, keys, 100, (error) => errors.push(error), 0);
    // A readable notice whose parent is gone: its settle answers -1 and it is deleted.
    await plant(client, keys, { ...BAD, readable: '["emq:{gone-parent}:1","completed","1",""]' });
    expect(await notices.sweep()).toBe(Object.keys(BAD).length + 1);
    await notices.drain();
    expect(errors.map((e) => /notice of job (\S+) of queue/.exec(e.message)?.[1]).sort()).toEqual(Object.keys(BAD).sort());
    expect(errors[0].message).toMatch(/is not a notice \(\[parentKey, outcome, value, policy\]\).*dropped$/);
    expect(await client.exists(keys.notices, keys.noticeData)).toBe(0);
    // The next sweep finds nothing: nothing reported again.
    expect(await notices.sweep()).toBe(0);
    expect(errors).toHaveLength(Object.keys(BAD).length);
  });

  it('in a worker: reported once through its error channel, deleted, and a flow still completes', async () => {
    const [parents, children] = [uniqueQueueName('parents'), uniqueQueueName('children')];
    const client = redis();
    const keys = new Keys(children, 'emq');
    await plant(client, keys, { 'not-json': BAD['not-json'], 'a-number': BAD['a-number'] });
    const errors: Error[] = [];
    const childWorker = new Worker(children, async () => 'ok', { connection: testConnection(), stalledInterval: 100 });
    childWorker.on('error', (error) => errors.push(error));
    const parentWorker = new Worker(parents, async () => 'done', { connection: testConnection() });
    const flow = new FlowProducer({ connection: testConnection() });
    closers.push(() => childWorker.close(true), () => parentWorker.close(true), () => flow.close());
    await eventually(async () => (await client.exists(keys.notices, keys.noticeData)) === 0, 5000, 'the bad notices deleted');
    // A notice planted now, old already, is delivered by a later sweep (only a sweep delivers it):
    // sweeps went on after the deletion, and reported nothing more.
    const tree = await flow.add({ name: 'p', queueName: parents, children: [{ name: 'c', queueName: children, opts: { jobId: 'late', delay: 60_000 } }] });
    await client.multi().zrem(keys.delayed, 'late').zadd(keys.completed, Date.now(), 'late').hset(keys.job('late'), 'finishedOn', Date.now(), 'returnvalue', '"ok"').exec();
    await plant(client, keys, { late: JSON.stringify([new Keys(parents, 'emq').job(tree.job.id), 'completed', '"ok"', '']) });
    await eventually(async () => (await tree.job.getState()) === 'completed', 10_000, 'the parent completed');
    expect(errors.map((e) => e.message.match(/notice of job (\S+)/)?.[1]).sort()).toEqual(['a-number', 'not-json']);
  });
});
