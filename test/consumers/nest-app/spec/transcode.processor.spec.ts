// A Jest spec as a Nest 11 app's `npm test` runs it (ts-jest, CommonJS): the package loads under
// Jest's own module system, and a job runs through the processor.
import 'reflect-metadata';
import { Test } from '@nestjs/testing';
import { getQueueToken, QueueEvents, type Queue } from '@echomq/nestjs';
import { AppModule } from './app.module';

describe('TranscodeProcessor', () => {
  it('transcodes a job added to the audio queue', async () => {
    const app = await Test.createTestingModule({ imports: [AppModule] }).compile();
    await app.init();
    const events = new QueueEvents('audio', { connection: process.env.REDIS_URL, prefix: process.env.ECHOMQ_PREFIX });
    try {
      const job = await app.get<Queue>(getQueueToken('audio')).add('transcode', { file: 'outro.wav' });
      await expect(job.waitUntilFinished(events, 20_000)).resolves.toEqual({ file: 'outro.mp3', format: 'mp3' });
    } finally {
      await events.close();
      await app.close();
    }
  });
});
