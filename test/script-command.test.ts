import { afterAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { Keys, Queue, Worker } from '../lib/index.js';
import { Scripts } from '../lib/internal.js';
import { evalshaCommand } from '../lib/protocol/script-command.js';
import { eventually, newClient, redisUrl, singleNodeDescribe, uniqueQueueName } from './support/redis.js';
import { newJob } from './support/scripts.js';

// Script calls go out as a Command built with its arguments in place (lib/protocol/script-command.ts),
// not through ioredis's evalsha(), which copies them with Array.prototype.flat().

describe('evalshaCommand', () => {
  it('sends the arguments in order, numbers as text and Buffers byte for byte', () => {
    const bytes = Buffer.from([0xff, 0x00, 0x41]);
    const command = evalshaCommand({}, 'abc', ['k1', 'k2'], ['x', 7, bytes])!;
    expect(command.name).toBe('evalsha');
    expect(command.args).toEqual(['abc', '2', 'k1', 'k2', 'x', '7', bytes]);
    const written = command.toWritable(undefined as never) as Buffer;
    expect(Buffer.isBuffer(written)).toBe(true);
    expect(written.includes(Buffer.concat([Buffer.from('$3\r\n'), bytes, Buffer.from('\r\n')]))).toBe(true);
  });

  it('is how Scripts sends a call, alone and pipelined, on a plain connection: never through evalsha()', async () => {
    const client = newClient();
    const used: string[] = [];
    // Records which of ioredis's ways a call takes, on the connection and on its pipelines.
    const recording = <T extends object>(target: T, label: string): T => new Proxy(target, {
      get(inner, property) {
        if (property === 'evalsha' || property === 'sendCommand') used.push(`${label}.${property}`);
        const value = Reflect.get(inner, property) as unknown;
        if (typeof value !== 'function') return value;
        const bound = (value as (...a: unknown[]) => unknown).bind(inner);
        return property === 'pipeline' ? () => recording(bound() as object, 'pipeline') : bound;
      },
    });
    const spy = recording(client, 'client');
    try {
      const scripts = new Scripts(spy, new Keys(uniqueQueueName('script-command')), 1000);
      await scripts.addJobs([newJob(), newJob()]); // pipelined (runPipelined)
      const picked = await scripts.moveToActive('00000000-0000-4000-8000-000000000000', 30_000, Date.now()); // alone (Script.run)
      expect(picked.job).toBeDefined();
      // (A first call of a script on this Redis answers NOSCRIPT and is resent alone, as EVAL.)
      expect(used).toContain('pipeline.sendCommand');
      expect(used).toContain('client.sendCommand');
      expect(used.filter((way) => way.endsWith('evalsha'))).toEqual([]);
    } finally {
      client.disconnect();
    }
  });

  it('leaves to ioredis a connection with a keyPrefix, friendly error stacks or auto-pipelining', () => {
    expect(evalshaCommand({ keyPrefix: 'p:' }, 'abc', ['k'], [])).toBeUndefined();
    expect(evalshaCommand({ showFriendlyErrorStack: true }, 'abc', ['k'], [])).toBeUndefined();
    expect(evalshaCommand({ enableAutoPipelining: true }, 'abc', ['k'], [])).toBeUndefined();
  });
});

// Single-node: the connections are built from the test Redis's URL with options of their own.
singleNodeDescribe('script calls on a connection ioredis builds the commands of', () => {
  const clients: Redis[] = [];
  afterAll(() => clients.forEach((client) => client.disconnect()));

  it.each([
    ['auto-pipelining', { enableAutoPipelining: true }],
    ['friendly error stacks', { showFriendlyErrorStack: true }],
  ])('adds and processes jobs with %s', async (_label, options) => {
    const connection = new Redis(redisUrl(), { maxRetriesPerRequest: null, ...options });
    clients.push(connection);
    const name = uniqueQueueName('script-command');
    const queue = new Queue(name, { connection });
    const done: number[] = [];
    const worker = new Worker(name, async (job) => { done.push((job.data as { i: number }).i); return job.data; }, { connection, concurrency: 4 });
    try {
      await queue.addBulk(Array.from({ length: 20 }, (_, i) => ({ name: 'j', data: { i } })));
      await eventually(() => done.length === 20, 10_000, 'all 20 jobs processed');
      expect(done.sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i));
      expect(await queue.getJobCounts('completed', 'active', 'waiting')).toEqual({ completed: 20, active: 0, waiting: 0 });
    } finally {
      await worker.close();
      await queue.close();
    }
  });
});
