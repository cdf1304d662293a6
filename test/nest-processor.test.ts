import 'reflect-metadata';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { Inject, Injectable, Scope } from '@nestjs/common';
import { REQUEST } from '@nestjs/core';
import type { TestingModule } from '@nestjs/testing';
import { EchoMQModule, OnWorkerEvent, Process, Processor, Queue, WorkerOrchestrator, type Job } from '../lib/index.js';
import { startApp } from './support/nest.js';
import { eventually, testConnection, uniqueQueueName } from './support/redis.js';

/** Finished state and result (or reason) of a job, read from Redis. */
async function outcome(queue: Queue, id: string) {
  // The state first: a hash read before it could predate the finish.
  const state = await (await queue.getJob(id))?.getState();
  if (state !== 'completed' && state !== 'failed') return undefined;
  const job = await queue.getJob(id);
  return { state, result: job?.returnvalue, reason: job?.failedReason };
}

/** Waits until the job finished; its outcome. */
async function finished(queue: Queue, id: string, what = `job ${id}`) {
  return (await eventually(() => outcome(queue, id), 10_000, what))!;
}

describe('@Processor and @Process', () => {
  let app: TestingModule | undefined;
  let queue: Queue;
  let name: string;
  beforeEach(() => {
    name = uniqueQueueName('proc');
    // A plain Queue, not registered with the module: the processors below must run anyway.
    queue = new Queue(name, { connection: testConnection() });
  });
  afterEach(async () => {
    await app?.close();
    app = undefined;
    await queue.close();
  });

  it('routes jobs to named handlers and the default, for a queue no module registered', async () => {
    @Processor(name)
    class Media {
      @Process('resize') resize(job: Job<{ w: number }>) {
        return `resized to ${job.data.w}`;
      }
      @Process('thumb') @Process('preview') small(job: Job) {
        return `small ${job.name}`;
      }
      @Process() other(job: Job) {
        return `default for ${job.name}`;
      }
    }
    app = await startApp({ imports: [EchoMQModule.forRoot({ connection: testConnection() })], providers: [Media] });
    const jobs = await Promise.all([queue.add('resize', { w: 64 }), queue.add('thumb', {}), queue.add('preview', {}), queue.add('zip', {})]);
    const results = await Promise.all(jobs.map((job) => finished(queue, job.id, `job ${job.name}`)));
    expect(results.map((r) => r.result)).toEqual(['resized to 64', 'small thumb', 'small preview', 'default for zip']);
  });

  it('fails a job whose name has no handler, naming the job name and the processor, without retrying', async () => {
    @Processor(name)
    class Strict {
      @Process('known') known() {
        return 'ok';
      }
    }
    app = await startApp({ imports: [EchoMQModule.forRoot({ connection: testConnection() })], providers: [Strict] });
    const job = await queue.add('unknown-name', {}, { attempts: 3 });
    const result = await finished(queue, job.id, 'the unhandled job');
    expect(result.state).toBe('failed');
    expect(result.reason).toMatch(/"unknown-name".*Strict/);
    expect((await queue.getJob(job.id))?.attemptsMade).toBe(1);
  });

  it('refuses at init two handlers for one job name, and a processor without handlers', async () => {
    @Processor(name)
    class Twice {
      @Process('a') one() {}
      @Process('a') two() {}
    }
    await expect(startApp({ imports: [EchoMQModule.forRoot({ connection: testConnection() })], providers: [Twice] })).rejects.toThrow(/two @Process\("a"\) handlers: one and two/);
    @Processor(name)
    class Empty {}
    await expect(startApp({ imports: [EchoMQModule.forRoot({ connection: testConnection() })], providers: [Empty] })).rejects.toThrow(/Empty has no @Process/);
  });

  it('finds processors given as useClass, useFactory and useValue providers', async () => {
    const names = [uniqueQueueName('cls'), uniqueQueueName('fac'), uniqueQueueName('val')];
    const make = (queueName: string, label: string) => {
      @Processor(queueName)
      class P {
        @Process() run() {
          return label;
        }
      }
      return P;
    };
    const [Cls, Fac, Val] = [make(names[0], 'class'), make(names[1], 'factory'), make(names[2], 'value')];
    app = await startApp({
      imports: [EchoMQModule.forRoot({ connection: testConnection() })],
      providers: [{ provide: 'CLS', useClass: Cls }, { provide: 'FAC', useFactory: () => new Fac() }, { provide: 'VAL', useValue: new Val() }],
    });
    const queues = names.map((n) => new Queue(n, { connection: testConnection() }));
    try {
      const jobs = await Promise.all(queues.map((q) => q.add('x', {})));
      const results = await Promise.all(jobs.map((job, i) => finished(queues[i], job.id, `job on ${names[i]}`)));
      expect(results).toEqual(['class', 'factory', 'value'].map((result) => expect.objectContaining({ result })));
    } finally {
      await Promise.all(queues.map((q) => q.close()));
    }
  });

  it('gives a request-scoped processor a fresh instance per job, with the job as its request, and its events', async () => {
    const seen: string[] = [];
    let instances = 0;
    @Injectable()
    class Dependency {}
    @Processor({ name, scope: Scope.REQUEST })
    class PerJob {
      readonly nr = ++instances;
      constructor(@Inject(REQUEST) private readonly request: Job, readonly dependency: Dependency) {}
      @Process() run(job: Job) {
        return { same: this.request === job, nr: this.nr, dependency: this.dependency instanceof Dependency };
      }
      @OnWorkerEvent('completed') done(job: Job) {
        seen.push(`completed ${job.id} request ${this.request.id}`);
      }
    }
    app = await startApp({ imports: [EchoMQModule.forRoot({ connection: testConnection() })], providers: [PerJob, Dependency] });
    const first = await queue.add('a', {});
    const second = await queue.add('b', {});
    const [one, two] = await Promise.all([first, second].map((job) => finished(queue, job.id, 'scoped job')));
    expect(one.result).toMatchObject({ same: true, dependency: true });
    expect(two).toMatchObject({ result: { same: true, dependency: true } });
    expect((one.result as { nr: number }).nr).not.toBe((two.result as { nr: number }).nr);
    await eventually(() => seen.length === 2, 10_000, 'events on the scoped processor');
    expect(seen.sort()).toEqual([`completed ${first.id} request ${first.id}`, `completed ${second.id} request ${second.id}`].sort());
  });

  it('gives a transient processor a fresh instance per job', async () => {
    let instances = 0;
    @Processor({ name, scope: Scope.TRANSIENT })
    class Fresh {
      readonly nr = ++instances;
      @Process() run() {
        return this.nr;
      }
    }
    app = await startApp({ imports: [EchoMQModule.forRoot({ connection: testConnection() })], providers: [Fresh] });
    const jobs = [await queue.add('a', {}), await queue.add('b', {})];
    const results = await Promise.all(jobs.map((job) => finished(queue, job.id, 'transient job')));
    expect(new Set(results.map((r) => r.result)).size).toBe(2);
  });

  it('passes jobTimeout from the root worker defaults, and a @Processor\'s own wins', async () => {
    @Processor({ name, jobTimeout: 100 })
    class Slow {
      @Process() async run(_job: Job, { signal }: { signal: AbortSignal }) {
        await new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
      }
    }
    app = await startApp({ imports: [EchoMQModule.forRoot({ connection: testConnection(), worker: { jobTimeout: 60_000 } })], providers: [Slow] });
    const job = await queue.add('slow', {});
    expect(await finished(queue, job.id)).toEqual({ state: 'failed', result: undefined, reason: `job ${job.id} timed out after 100 ms` });
  });

  it('takes metrics from the root worker defaults or from @Processor, whose own wins: getMetrics counts the jobs', async () => {
    const own = uniqueQueueName('proc-own');
    @Processor(name)
    class Rooted {
      @Process() run() {
        return 'ok';
      }
    }
    @Processor({ name: own, metrics: { maxDataPoints: 5 } })
    class Own {
      @Process() run() {
        return 'ok';
      }
    }
    app = await startApp({ imports: [EchoMQModule.forRoot({ connection: testConnection(), worker: { metrics: { maxDataPoints: 60 } } })], providers: [Rooted, Own] });
    const orchestrator = app.get(WorkerOrchestrator, { strict: false });
    expect(orchestrator.getWorker(name)!.options.metrics).toEqual({ maxDataPoints: 60 });
    expect(orchestrator.getWorker(own)!.options.metrics).toEqual({ maxDataPoints: 5 });
    const ownQueue = new Queue(own, { connection: testConnection() });
    try {
      const jobs = [await queue.add('a', {}), await queue.add('b', {}), await ownQueue.add('c', {})];
      await Promise.all(jobs.map((job, i) => finished(i < 2 ? queue : ownQueue, job.id)));
      await app.close(); // the workers send their last counts as they close
      app = undefined;
      expect((await queue.getMetrics('completed')).meta.count).toBe(2);
      expect((await ownQueue.getMetrics('completed')).meta.count).toBe(1);
    } finally {
      await ownQueue.close();
    }
  });

  it('refuses a bad metrics option on @Processor at init, naming the field', async () => {
    @Processor({ name, metrics: { maxDataPoints: 0 } })
    class Bad {
      @Process() run() {
        return 'ok';
      }
    }
    const error = await startApp({ imports: [EchoMQModule.forRoot({ connection: testConnection() })], providers: [Bad] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toMatch(/metrics\.maxDataPoints/);
    expect((error as Error).message).toMatch(/Bad/);
  });

  it('calls @OnWorkerEvent methods for active, progress, completed and failed; a throwing listener crashes nothing', async () => {
    const events: string[] = [];
    @Processor(name)
    class Watched {
      @Process('ok') async ok(job: Job) {
        await job.updateProgress(50);
        return 'fine';
      }
      @Process('bad') bad() {
        throw new Error('boom');
      }
      @OnWorkerEvent('active') active(job: Job) {
        events.push(`active ${job.name}`);
        throw new Error('a listener that throws is only logged');
      }
      @OnWorkerEvent('progress') progress(job: Job, value: unknown) {
        events.push(`progress ${job.name} ${value}`);
      }
      @OnWorkerEvent('completed') completed(job: Job, result: unknown) {
        events.push(`completed ${job.name} ${result}`);
      }
      @OnWorkerEvent('failed') async failed(job: Job, error: Error) {
        events.push(`failed ${job.name} ${error.message}`);
      }
    }
    app = await startApp({ imports: [EchoMQModule.forRoot({ connection: testConnection() })], providers: [Watched] });
    await queue.add('ok', {});
    await queue.add('bad', {});
    await eventually(() => events.length === 5, 10_000, 'five worker events');
    expect(events.sort()).toEqual(['active bad', 'active ok', 'completed ok fine', 'failed bad boom', 'progress ok 50']);
  });
});
