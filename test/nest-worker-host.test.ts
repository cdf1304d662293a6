import 'reflect-metadata';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { Inject, Scope } from '@nestjs/common';
import { REQUEST } from '@nestjs/core';
import type { TestingModule } from '@nestjs/testing';
import { EchoMQModule, Process, Processor, Queue, Worker, WorkerHost, type Job } from '../lib/index.js';
import { startApp } from './support/nest.js';
import { eventually, testConnection, uniqueQueueName } from './support/redis.js';

/** The job's result once it completed (undefined before). */
async function resultOf(queue: Queue, id: string): Promise<unknown> {
  const job = await queue.getJob(id);
  return (await job?.getState()) === 'completed' ? (await queue.getJob(id))?.returnvalue : undefined;
}

// @nestjs/bullmq's processor shape beside ours: `class X extends WorkerHost { process(job, token) }`
// and `@Processor(name, workerOptions)`, so that a migrating app's processors move by their imports.
describe('WorkerHost and @Processor(name, workerOptions)', () => {
  let app: TestingModule | undefined;
  let queue: Queue;
  let name: string;
  beforeEach(() => {
    name = uniqueQueueName('host');
    queue = new Queue(name, { connection: testConnection() });
  });
  afterEach(async () => {
    await app?.close();
    app = undefined;
    await queue.close();
  });

  it('runs every job in process(job, token), with the run\'s lock token, and this.worker is the queue\'s Worker', async () => {
    const seen: Array<{ name: string; token: unknown; worker: boolean }> = [];
    @Processor(name)
    class Transcoder extends WorkerHost {
      async process(job: Job<{ file: string }>, token?: string) {
        seen.push({ name: job.name, token, worker: this.worker instanceof Worker && this.worker.name === name });
        return `${job.data.file} as mp3`;
      }
    }
    app = await startApp({ imports: [EchoMQModule.forRoot({ connection: testConnection() })], providers: [Transcoder] });
    const jobs = await Promise.all([queue.add('transcode', { file: 'a.wav' }), queue.add('other', { file: 'b.wav' })]);
    const results = await Promise.all(jobs.map((job) => eventually(() => resultOf(queue, job.id), 10_000, `job ${job.name}`)));
    expect(results).toEqual(['a.wav as mp3', 'b.wav as mp3']);
    expect(seen.map((s) => s.name).sort()).toEqual(['other', 'transcode']);
    for (const s of seen) {
      expect(typeof s.token).toBe('string');
      expect(s.worker).toBe(true);
    }
    expect(app.get(Transcoder).worker.name).toBe(name);
  });

  it('this.worker before the Worker exists throws, naming the class', () => {
    class Early extends WorkerHost {
      async process() {
        return undefined;
      }
    }
    expect(() => new Early().worker).toThrow(/Early\.worker is read before its Worker exists/);
  });

  it('takes the worker options second, over the first argument\'s, as @nestjs/bullmq does', async () => {
    let running = 0;
    let most = 0;
    @Processor(name, { concurrency: 3 })
    class Wide extends WorkerHost {
      async process() {
        running += 1;
        most = Math.max(most, running);
        await new Promise((resolve) => setTimeout(resolve, 150));
        running -= 1;
        return 'ok';
      }
    }
    app = await startApp({ imports: [EchoMQModule.forRoot({ connection: testConnection() })], providers: [Wide] });
    const jobs = await queue.addBulk(Array.from({ length: 6 }, (_, i) => ({ name: 'job', data: { i } })));
    await Promise.all(jobs.map((job) => eventually(() => resultOf(queue, job.id), 10_000, `job ${job.id}`)));
    expect(most).toBe(3);
  });

  it('sends a job to its @Process(name) method first, and every other job to process()', async () => {
    @Processor(name)
    class Mixed extends WorkerHost {
      @Process('resize') resize(job: Job<{ w: number }>) {
        return `resized to ${job.data.w}`;
      }
      async process(job: Job) {
        return `processed ${job.name}`;
      }
    }
    app = await startApp({ imports: [EchoMQModule.forRoot({ connection: testConnection() })], providers: [Mixed] });
    const jobs = await Promise.all([queue.add('resize', { w: 64 }), queue.add('zip', {})]);
    const results = await Promise.all(jobs.map((job) => eventually(() => resultOf(queue, job.id), 10_000, `job ${job.name}`)));
    expect(results).toEqual(['resized to 64', 'processed zip']);
  });

  it('refuses a default @Process() beside process(): two defaults', async () => {
    @Processor(name)
    class Twice extends WorkerHost {
      @Process() other() {
        return 'other';
      }
      async process() {
        return 'process';
      }
    }
    await expect(startApp({ imports: [EchoMQModule.forRoot({ connection: testConnection() })], providers: [Twice] }))
      .rejects.toThrow(/Twice has two default @Process\(\) handlers: other and process/);
  });

  it('gives a request-scoped WorkerHost a fresh instance per job, each with the Worker', async () => {
    @Processor({ name, scope: Scope.REQUEST })
    class PerJob extends WorkerHost {
      constructor(@Inject(REQUEST) private readonly request: Job) {
        super();
      }
      async process(job: Job) {
        return { sameJob: this.request.id === job.id, worker: this.worker.name };
      }
    }
    app = await startApp({ imports: [EchoMQModule.forRoot({ connection: testConnection() })], providers: [PerJob] });
    const job = await queue.add('one', {});
    expect(await eventually(() => resultOf(queue, job.id), 10_000, 'the scoped job')).toEqual({ sameJob: true, worker: name });
  });
});
