// The same from an ES module: import the package and each subpath, and require() reaches the
// same copy of it.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { EchoMQError, Queue, QueueEvents, Worker } from '@echomq/nestjs';
import { EchoMQOtel } from '@echomq/nestjs/otel';
import { collectLockMetrics } from '@echomq/nestjs/prometheus';
import { EchoMQAdapter } from '@echomq/nestjs/bull-board';
import { Scripts } from '@echomq/nestjs/internal';

const require = createRequire(import.meta.url);
assert.equal(require('@echomq/nestjs').Queue, Queue);
assert.equal(require('@echomq/nestjs').EchoMQError, EchoMQError);
assert.equal(require('@echomq/nestjs/otel').EchoMQOtel, EchoMQOtel);
for (const value of [EchoMQOtel, collectLockMetrics, EchoMQAdapter, Scripts]) assert.equal(typeof value, 'function');

const options = { connection: process.env.REDIS_URL, prefix: process.env.ECHOMQ_PREFIX };
const queue = new Queue('plain-esm', options);
const events = new QueueEvents('plain-esm', options);
const worker = new Worker('plain-esm', async (job) => job.data.n + 1, options);
try {
  const job = await queue.add('increment', { n: 41 });
  console.log(JSON.stringify({ result: await job.waitUntilFinished(events, 20_000) }));
} finally {
  await worker.close();
  await events.close();
  await queue.close();
}
