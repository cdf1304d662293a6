import { afterAll, describe, expect, it } from '@jest/globals';
import type { Queue } from '../lib/index.js';
import { eventually, newClient, uniqueQueueName } from './support/redis.js';
import { finished, queue, worker } from './support/test-resources.js';

// A keep rule (removeOnComplete / removeOnFail as a count or an age) holds on an idle queue too:
// each finish trims at most 1000 jobs, and the workers' sweep goes on with the last rule, in
// bounded calls, until it holds (docs/protocol.md, "Keep rules"; issue 39, finding 6).
const client = newClient();
afterAll(() => client.quit());

/** `count` finished jobs written straight into `state`'s set, finished `agoMs` ago, as a long-lived queue would hold them. */
async function finishedBefore(q: Queue, state: 'completed' | 'failed', count: number, agoMs: number): Promise<void> {
  const at = Date.now() - agoMs;
  for (let from = 0; from < count; from += 500) {
    const pipeline = client.pipeline();
    for (let i = from; i < Math.min(count, from + 500); i++) {
      const id = `old-${i}`;
      pipeline.hset(q.keys.job(id), 'name', 'old', 'data', '{}', 'opts', '{}', 'timestamp', at, 'finishedOn', at, 'atm', 1);
      pipeline.rpush(`${q.keys.job(id)}:logs`, 'a line');
      pipeline.zadd(q.keys.state(state), at + i, id);
    }
    await pipeline.exec();
  }
}

describe('a keep rule lowered on a set far over it', () => {
  it('a count: once one job finished with it, the set comes down to the count with no further traffic, old jobs\' keys gone', async () => {
    const q = queue(uniqueQueueName('trim'));
    await finishedBefore(q, 'completed', 3000, 60_000);
    worker(q.name, async () => 'done', { stalledInterval: 300 });
    const job = await q.add('new', {}, { removeOnComplete: 10 });
    await finished(q, job.id);
    // The finish alone trims 1000: the rest is the sweep's.
    await eventually(async () => (await client.zcard(q.keys.completed)) === 10, 10_000, 'completed down to 10');
    expect(await client.exists(q.keys.job('old-0'), `${q.keys.job('old-0')}:logs`, q.keys.job('old-2500'))).toBe(0);
    expect(await client.exists(q.keys.job(job.id))).toBe(1);
  });

  it('an age: failed jobs older than it go, however many', async () => {
    const q = queue(uniqueQueueName('trim'));
    await finishedBefore(q, 'failed', 3000, 3_600_000);
    worker(q.name, async () => { throw new Error('no'); }, { stalledInterval: 300 });
    const job = await q.add('new', {}, { removeOnFail: { age: 60 } });
    await finished(q, job.id);
    await eventually(async () => (await client.zcard(q.keys.failed)) === 1, 10_000, 'only the new failure left');
    expect(await client.zrange(q.keys.failed, '0', '-1')).toEqual([job.id]);
  });

  it('a count of 0 beside an age removes the job at its finish and trims nothing else', async () => {
    const q = queue(uniqueQueueName('trim'));
    await finishedBefore(q, 'completed', 50, 3_600_000);
    worker(q.name, async () => 'done', { stalledInterval: 300 });
    const job = await q.add('new', {}, { removeOnComplete: { count: 0, age: 60 } });
    await eventually(async () => (await client.exists(q.keys.job(job.id))) === 0, 5000, 'the job removed at its finish');
    await new Promise((resolve) => setTimeout(resolve, 1500)); // a few sweeps
    expect(await client.zcard(q.keys.completed)).toBe(50);
  });
});
