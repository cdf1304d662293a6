import { afterEach, describe, expect, it } from '@jest/globals';
import type { Cluster, Redis } from 'ioredis';
import { Keys, Queue } from '../lib/index.js';
import { Scripts } from '../lib/internal.js';
import { Fetcher } from '../lib/runtime/worker/fetcher.js';
import { eventually, masters, newClient, testConnection, uniqueQueueName } from './support/redis.js';

// The Fetcher's idle wait against real Redis: a delayed job's due time ends the wait by a local
// timer (Redis would time a block out only on its 100 ms cron), and the block that timer outlived
// never swallows a wake-up meant for another idle worker.
const DRAIN_DELAY_S = 60; // far over the test timeout: a wait that relied on it would hang the test

const clients: Array<Redis | Cluster> = [];
const fetchers: Fetcher[] = [];
const queues: Queue[] = [];
afterEach(async () => {
  for (const fetcher of fetchers.splice(0)) fetcher.interrupt();
  for (const queue of queues.splice(0)) await queue.close();
  for (const client of clients.splice(0)) client.disconnect();
});

function client(): Redis | Cluster {
  const made = newClient();
  clients.push(made);
  return made;
}

function fetcher(keys: Keys, shared: Redis | Cluster): Fetcher {
  const made = new Fetcher(new Scripts(shared, keys, 1000), shared, client(), keys, { lockDuration: 30_000, drainDelay: DRAIN_DELAY_S });
  fetchers.push(made);
  return made;
}

/** Clients blocked in Redis now, summed over every master of a Cluster (INFO sees one node). */
async function blockedClients(redis: Redis | Cluster): Promise<number> {
  let blocked = 0;
  for (const server of await masters(redis)) blocked += Number(/blocked_clients:(\d+)/.exec(await server.info('clients'))![1]);
  return blocked;
}

describe('Fetcher: waiting for work', () => {
  it('ends the wait when the next delayed job is due, without waiting for drainDelay', async () => {
    const shared = client();
    const keys = new Keys(uniqueQueueName());
    await fetcher(keys, shared).waitForWork({ nextDelayedAt: Date.now() + 50, rateLimitedFor: 0 });
  });

  it('puts back a marker that an outlived block popped, so another idle worker wakes', async () => {
    const shared = client();
    const keys = new Keys(uniqueQueueName());
    const busy = fetcher(keys, shared);
    const idle = fetcher(keys, shared);
    const before = await blockedClients(shared);
    // `busy` woke for a delayed job and went to run it; its block stays queued first in Redis.
    await busy.waitForWork({ nextDelayedAt: Date.now() + 50, rateLimitedFor: 0 });
    const idleWoke = idle.waitForWork({ nextDelayedAt: 0, rateLimitedFor: 0 });
    await eventually(async () => (await blockedClients(shared)) === before + 2, 10_000, 'both blocks in Redis');
    await shared.zadd(keys.marker, 0, '0');
    await idleWoke;
    expect(await blockedClients(shared)).toBe(before);
    expect(await shared.zcard(keys.marker)).toBe(0);
  });

  it('passes a due time on to every blocked worker, so it is not lost with the one it woke', async () => {
    const shared = client();
    const name = uniqueQueueName();
    const keys = new Keys(name);
    const queue = new Queue(name, { connection: testConnection() });
    queues.push(queue);
    const before = await blockedClients(shared);
    // Blocked in this order; Redis serves the one blocked longest first.
    const first = fetcher(keys, shared);
    const firstWoke = first.waitForWork({ nextDelayedAt: 0, rateLimitedFor: 0 });
    await eventually(async () => (await blockedClients(shared)) === before + 1, 10_000, 'the first block in Redis');
    const second = fetcher(keys, shared);
    const secondWoke = second.waitForWork({ nextDelayedAt: 0, rateLimitedFor: 0 });
    await eventually(async () => (await blockedClients(shared)) === before + 2, 10_000, 'both blocks in Redis');
    const job = await queue.add('later', {}, { delay: 60_000 }); // sets "1" at its due time
    const dueAt = job.timestamp + 60_000;
    // The first wakes and reads the queue; its pickup confirms the due time and passes it on. A wait
    // that relied on drainDelay would hang the test.
    await firstWoke;
    expect((await first.fetch('t1')).pickup.nextDelayedAt).toBe(dueAt);
    await secondWoke;
    await second.fetch('t2');
    // Nobody that knew the due time has taken it out of the round yet.
    expect(await shared.zscore(keys.marker, '1')).toBe(String(dueAt));
  });

  it('drops a due time no delayed job has any more, instead of passing it around', async () => {
    const shared = client();
    const keys = new Keys(uniqueQueueName());
    const waiter = fetcher(keys, shared);
    const woke = waiter.waitForWork({ nextDelayedAt: 0, rateLimitedFor: 0 });
    // A "1" left by a delayed job that was removed or promoted since.
    await shared.zadd(keys.marker, Date.now() + 60_000, '1');
    await woke;
    expect((await waiter.fetch('t')).pickup.nextDelayedAt).toBe(0);
    expect(await shared.zcard(keys.marker)).toBe(0); // ordered after any put-back on this connection
  });

  it('keeps waiting, and ends the round, when it knew an earlier or the same due time', async () => {
    const shared = client();
    const keys = new Keys(uniqueQueueName());
    const knownDueAt = Date.now() + 3000;
    let ended = false;
    const wait = fetcher(keys, shared).waitForWork({ nextDelayedAt: knownDueAt, rateLimitedFor: 0 }).then(() => { ended = true; });
    await shared.zadd(keys.marker, knownDueAt + 1000, '1');
    await eventually(async () => (await shared.zcard(keys.marker)) === 0, 10_000, 'the marker popped');
    expect(ended).toBe(false);
    await wait;
    expect(Date.now()).toBeGreaterThanOrEqual(knownDueAt);
    expect(await shared.zcard(keys.marker)).toBe(0);
  });

  it('takes a due time that has come as its own wake-up, without passing it on', async () => {
    const shared = client();
    const keys = new Keys(uniqueQueueName());
    const wait = fetcher(keys, shared).waitForWork({ nextDelayedAt: 0, rateLimitedFor: 0 });
    await shared.zadd(keys.marker, Date.now() - 1, '1');
    await wait;
    expect(await shared.zcard(keys.marker)).toBe(0);
  });
});
