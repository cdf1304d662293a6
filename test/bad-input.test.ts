import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { EchoMQOptionError, Queue, Worker, type JobOptions } from '../lib/index.js';
import { newClient, queueKeys, testConnection, uniqueQueueName } from './support/redis.js';

/**
 * Bad input is refused before Redis is touched: a typed EchoMQOptionError that names the field,
 * says what was wrong and what is accepted, and the queue's keys are exactly what they were.
 */
describe('bad input', () => {
  const client = newClient();
  const name = uniqueQueueName('bad');
  let queue: Queue;
  let before: string[];

  beforeAll(async () => {
    queue = new Queue(name, { connection: testConnection(), maxDataSize: 1000 });
    await queue.add('seed', { ok: true });
    before = await queueKeys(client, name);
  });
  afterAll(async () => {
    await queue.obliterate({ force: true });
    await queue.close();
    await client.quit();
  });

  /** Expects `action` to be refused with an EchoMQOptionError whose field and message match. */
  async function expectRefused(action: () => unknown, field: RegExp, message: RegExp): Promise<void> {
    let caught: unknown;
    try {
      await action();
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(EchoMQOptionError);
    expect((caught as EchoMQOptionError).field).toMatch(field);
    expect((caught as Error).message).toMatch(message);
    expect(await queueKeys(client, name)).toEqual(before);
  }

  it.each([
    ['empty', '', /non-empty/],
    ['oversized', 'q'.repeat(201), /at most 200/],
    ['with a colon', 'orders:eu', /":", "\{" or "\}".*use "-" or "\." instead/],
    ['with braces', 'orders{eu}', /":", "\{" or "\}"/],
  ])('refuses a queue name that is %s, for Queue and Worker alike', async (_label, bad, message) => {
    await expectRefused(() => new Queue(bad, { connection: testConnection() }), /queue name/, message);
    await expectRefused(() => new Worker(bad, async () => 1, { connection: testConnection(), autorun: false }), /queue name/, message);
  });

  const badOptions: Array<[string, JobOptions | Record<string, unknown>, RegExp, RegExp]> = [
    ['a job id with ":"', { jobId: 'order:1' }, /jobId/, /separates key parts/],
    ['a plain-integer job id', { jobId: '42' }, /jobId/, /reserved for automatic ids/],
    ['a job id naming a queue key', { jobId: 'wait' }, /jobId/, /queue's own keys/],
    ['a negative delay', { delay: -5 }, /delay/, /whole number of 0 or more, got -5/],
    ['a non-numeric delay', { delay: '10s' }, /delay/, /got "10s"/],
    ['a fractional delay', { delay: 1.5 }, /delay/, /whole number/],
    ['a negative priority', { priority: -1 }, /priority/, /0 or more/],
    ['a non-numeric priority', { priority: 'high' }, /priority/, /got "high"/],
    ['a priority over the maximum', { priority: 2 ** 22 }, /priority/, /is 4194304; the highest allowed is \d+/],
    ['zero attempts', { attempts: 0 }, /attempts/, /above 0/],
    ['negative attempts', { attempts: -3 }, /attempts/, /above 0/],
    ['non-numeric attempts', { attempts: 'many' }, /attempts/, /got "many"/],
    ['a backoff type that is no name', { backoff: { type: 42, delay: 100 } }, /backoff\.type/, /use "fixed", "exponential" or the name of a custom type/],
    ['a backoff that is a string', { backoff: 'fast' }, /backoff/, /number of ms or \{ type, delay \}/],
    ['a negative backoff delay', { backoff: { type: 'fixed', delay: -1 } }, /backoff\.delay/, /0 or more/],
    ['a backoff jitter over 1', { backoff: { type: 'fixed', delay: 100, jitter: 1.5 } }, /backoff\.jitter/, /a number from 0 to 1.*got 1\.5/],
  ];

  it.each(badOptions)('refuses %s', async (_label, opts, field, message) => {
    await expectRefused(() => queue.add('job', {}, opts as JobOptions), field, message);
  });

  it('refuses a whole addBulk when one of its jobs is bad, and names which one', async () => {
    await expectRefused(() => queue.addBulk([{ name: 'ok', data: {} }, { name: 'bad', data: {}, opts: { delay: -1 } }]), /addBulk\[1\]/, /delay/);
  });

  const circular: Record<string, unknown> = { a: 1 };
  circular.self = circular;
  const unrepresentable: Array<[string, unknown, RegExp, RegExp]> = [
    ['circular data', circular, /data/, /cannot be represented as JSON/],
    ['a BigInt', { amount: 10n }, /data\.amount/, /BigInt.*send it as a string/],
    ['a function', { callback: () => 1 }, /data\.callback/, /function, which JSON cannot carry/],
    ['a symbol', { tag: Symbol('x') }, /data\.tag/, /symbol/],
    ['NaN', { ratio: Number.NaN }, /data\.ratio/, /NaN, which JSON would turn into null/],
    ['a Map', { index: new Map([[1, 2]]) }, /data\.index/, /Map.*send an array or object/],
    ['data over maxDataSize', { blob: 'x'.repeat(2000) }, /data/, /over the limit of 1000 \(the option maxDataSize/],
  ];

  it.each(unrepresentable)('refuses %s in job data', async (_label, data, field, message) => {
    await expectRefused(() => queue.add('job', data), field, message);
  });

  it('refuses a bad default job option when the queue is made', async () => {
    await expectRefused(() => new Queue(uniqueQueueName(), { connection: testConnection(), defaultJobOptions: { attempts: 0 } }), /defaultJobOptions\.attempts/, /above 0/);
  });

  it.each([
    [{ lockDuration: 1000, lockRenewTime: 1000 }, /lockRenewTime/, /must be below lockDuration \(1000 ms\)/],
    [{ lockDuration: 1000, lockRenewTime: 5000 }, /lockRenewTime/, /every lock lapses before its renewal/],
    [{ lockDuration: 0 }, /lockDuration/, /above 0/],
    [{ stalledInterval: -1 }, /stalledInterval/, /above 0/],
    [{ concurrency: 0 }, /concurrency/, /above 0/],
    [{ maxStalledCount: -1 }, /maxStalledCount/, /0 or more/],
  ])('refuses worker timing %p', async (opts, field, message) => {
    await expectRefused(() => new Worker(name, async () => 1, { connection: testConnection(), autorun: false, ...opts }), field, message);
  });
});
