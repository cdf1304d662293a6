// A worker app: it adds one job to the audio queue, waits for its processor's result, prints it
// as a line of JSON and closes. The consumer test (test/consumers/apps.test.mjs) reads that line.
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { getQueueToken, QueueEvents, type Queue } from '@echomq/nestjs';
import { AppModule } from './app.module.js';

async function main(): Promise<void> {
  const app = await NestFactory.createApplicationContext(AppModule, { logger: ['error', 'warn'] });
  const events = new QueueEvents('audio', { connection: process.env.REDIS_URL, prefix: process.env.ECHOMQ_PREFIX });
  try {
    const queue = app.get<Queue>(getQueueToken('audio'));
    const job = await queue.add('transcode', { file: 'intro.wav' });
    const result = await job.waitUntilFinished(events, 20_000);
    console.log(JSON.stringify({ id: job.id, result }));
  } finally {
    await events.close();
    await app.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
