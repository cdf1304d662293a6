import { describe, expect, it } from '@jest/globals';
import { Cluster, Redis } from 'ioredis';
import { fileURLToPath } from 'node:url';
import { EchoMQOptionError, FlowProducer, Queue, QueueEvents, Worker } from '../lib/index.js';
import type { ConnectionInput } from '../lib/runtime/core/connection.js';
import { newClient, scanKeys, testConnection, uniqueQueueName } from './support/redis.js';

const NOOP_PROCESSOR = fileURLToPath(new URL('./fixtures/sandbox/noop.mjs', import.meta.url));

/** Something with a close: what a constructor that should have refused would leave open. */
type Closable = { close(): Promise<unknown> };

/**
 * ioredis's keyPrefix is refused wherever a connection is given, before anything connects: the
 * scripts build job keys from the queue's prefix, which ioredis does not prefix, so a queue would
 * write its keys under two prefixes (lib/runtime/core/connection.ts, assertConnection). The port is one
 * nothing listens on and instances are lazy: a constructor that let the connection through would
 * leave the instance connecting, which the status check sees.
 */
describe('a connection with ioredis keyPrefix', () => {
  const name = uniqueQueueName('key-prefix');
  const unreachable = { host: '127.0.0.1', port: 1 };

  const connections: Array<[string, () => ConnectionInput]> = [
    ['ioredis options', () => ({ ...unreachable, lazyConnect: true, keyPrefix: 'app:' })],
    ['a Redis instance', () => new Redis({ ...unreachable, lazyConnect: true, keyPrefix: 'app:' })],
    ['a redis:// URL with ?keyPrefix=', () => 'redis://127.0.0.1:1/0?keyPrefix=app:'],
    ['a Cluster instance (its own keyPrefix)', () => new Cluster([unreachable], { lazyConnect: true, keyPrefix: 'app:' })],
    ['a Cluster instance (in its redisOptions)', () => new Cluster([unreachable], { lazyConnect: true, redisOptions: { keyPrefix: 'app:' } })],
  ];

  const constructors: Array<[string, (connection: ConnectionInput) => Closable]> = [
    ['Queue', (connection) => new Queue(name, { connection })],
    ['Worker', (connection) => new Worker(name, async () => 1, { connection, autorun: false })],
    ['a sandboxed Worker', (connection) => new Worker(name, NOOP_PROCESSOR, { connection, autorun: false })],
    ['QueueEvents', (connection) => new QueueEvents(name, { connection, autorun: false })],
    ['FlowProducer', (connection) => new FlowProducer({ connection })],
  ];

  describe.each(connections)('given as %s', (_label, makeConnection) => {
    it.each(constructors)('is refused by %s with a typed error naming the field, before connecting', async (_what, construct) => {
      const connection = makeConnection();
      let made: Closable | undefined;
      let caught: unknown;
      try {
        made = construct(connection);
      } catch (error) {
        caught = error;
      } finally {
        await made?.close();
      }
      expect(caught).toBeInstanceOf(EchoMQOptionError);
      expect((caught as EchoMQOptionError).field).toBe('connection.keyPrefix');
      expect((caught as Error).message).toMatch(/keyPrefix \("app:"\) is not supported.*use the prefix option instead/);
      if (connection instanceof Redis || connection instanceof Cluster) {
        expect(connection.status).toBe('wait'); // never asked to connect
        connection.disconnect();
      }
    });
  });

  it('leaves a connection without one alone: the same queue adds and finds its job under its own prefix', async () => {
    const client = newClient();
    const queue = new Queue(name, { connection: testConnection() });
    try {
      const job = await queue.add('plain', { ok: true });
      expect((await queue.getJob(job.id))?.data).toEqual({ ok: true });
      expect(await scanKeys(client, `*${name}*`)).toEqual(expect.arrayContaining([`emq:{${name}}:${job.id}`]));
      expect(await scanKeys(client, `app:*${name}*`)).toEqual([]);
    } finally {
      await queue.obliterate({ force: true });
      await queue.close();
      client.disconnect();
    }
  });
});
