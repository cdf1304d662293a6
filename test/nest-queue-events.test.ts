import 'reflect-metadata';
import { afterEach, describe, expect, it, jest } from '@jest/globals';
import { Injectable, Logger, Scope, type ModuleMetadata } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import {
  EchoMQModule, OnQueueEvent, Process, Processor, Queue, QueueEvents, QueueEventsHost, QueueEventsListener, type Job,
} from '../lib/index.js';
import { startApp } from './support/nest.js';
import { eventually, testConnection, uniqueQueueName } from './support/redis.js';

// @QueueEventsListener classes: their @OnQueueEvent methods get the queue's events from any
// process, through a QueueEvents started with the app and closed with it.

let app: TestingModule | undefined;
const queues: Queue[] = [];
afterEach(async () => {
  await app?.close();
  app = undefined;
  for (const queue of queues.splice(0)) await queue.close();
  jest.restoreAllMocks();
});

/** A plain Queue of another "process": the events must come through Redis, not the app. */
function producer(name: string, partitions?: number): Queue {
  const queue = new Queue(name, { connection: testConnection(), ...(partitions ? { partitions } : {}) });
  queues.push(queue);
  return queue;
}

describe('@QueueEventsListener', () => {
  it('calls @OnQueueEvent methods with QueueEvents\' arguments, for jobs of any process', async () => {
    const name = uniqueQueueName('qel');
    @Processor(name)
    class Work {
      @Process() run(job: Job<{ fail?: boolean }>) {
        if (job.data.fail) throw new Error('it broke');
        return { done: job.id };
      }
    }
    const seen: Array<[string, unknown, string]> = [];
    @QueueEventsListener(name)
    class Watcher {
      @OnQueueEvent('completed') completed(args: { jobId: string; returnvalue: unknown }, id: string) {
        seen.push(['completed', args, id]);
      }
      @OnQueueEvent('failed') @OnQueueEvent('waiting') other(args: { jobId: string }, id: string) {
        seen.push([('failedReason' in args) ? 'failed' : 'waiting', args, id]);
      }
    }
    app = await startApp({ imports: [EchoMQModule.forRoot({ connection: testConnection() })], providers: [Work, Watcher] });
    const queue = producer(name);
    const good = await queue.add('good', {});
    const bad = await queue.add('bad', { fail: true });
    await eventually(() => (seen.filter(([event]) => event !== 'waiting').length === 2 ? true : undefined), 10_000, 'both outcomes');
    expect(seen).toContainEqual(['completed', expect.objectContaining({ jobId: good.id, returnvalue: { done: good.id } }), expect.stringMatching(/^\d+-\d+$/)]);
    expect(seen).toContainEqual(['failed', expect.objectContaining({ jobId: bad.id, failedReason: 'it broke' }), expect.stringMatching(/^\d+-\d+$/)]);
    expect(seen.filter(([event]) => event === 'waiting').map(([, args]) => (args as { jobId: string }).jobId)).toEqual([good.id, bad.id]);
  });

  it('gives a QueueEventsHost its QueueEvents, started with the app and closed with it', async () => {
    const name = uniqueQueueName('qel');
    @QueueEventsListener(name, { blockingTimeout: 500 })
    class Hosted extends QueueEventsHost {}
    app = await startApp({ imports: [EchoMQModule.forRoot({ connection: testConnection(), prefix: 'emqx' })], providers: [Hosted] });
    const host = app.get(Hosted);
    const events = host.queueEvents;
    expect(events).toBeInstanceOf(QueueEvents);
    expect(events.name).toBe(name);
    expect(events.keys.events).toBe(`emqx:{${name}}:events`); // the configuration's prefix
    const ids: string[] = [];
    events.event$('waiting').subscribe((entry) => ids.push(entry.jobId));
    const queue = new Queue(name, { connection: testConnection(), prefix: 'emqx' });
    queues.push(queue);
    const job = await queue.add('x', {});
    await eventually(() => (ids.length === 1 ? true : undefined), 5000, 'the waiting event');
    expect(ids).toEqual([job.id]);

    await app.close();
    app = undefined;
    await expect(events.waitUntilReady()).rejects.toThrow(/closed/);
  });

  it('logs what a listener throws or rejects with, and goes on delivering', async () => {
    const name = uniqueQueueName('qel');
    const logged: string[] = [];
    jest.spyOn(Logger.prototype, 'error').mockImplementation((message: unknown) => void logged.push(String(message)));
    const delivered: string[] = [];
    @QueueEventsListener(name)
    class Clumsy {
      @OnQueueEvent('waiting') sync({ jobId }: { jobId: string }) {
        delivered.push(jobId);
        throw new Error(`sync ${jobId}`);
      }
      @OnQueueEvent('waiting') async later({ jobId }: { jobId: string }) {
        throw new Error(`async ${jobId}`);
      }
    }
    app = await startApp({ imports: [EchoMQModule.forRoot({ connection: testConnection() })], providers: [Clumsy] });
    const queue = producer(name);
    const a = await queue.add('a', {});
    const b = await queue.add('b', {});
    await eventually(() => (logged.length === 4 ? true : undefined), 5000, 'four errors logged');
    expect(delivered).toEqual([a.id, b.id]);
    expect(logged.sort()).toEqual([
      `Clumsy.later (queue "${name}") threw: async ${a.id}`, `Clumsy.later (queue "${name}") threw: async ${b.id}`,
      `Clumsy.sync (queue "${name}") threw: sync ${a.id}`, `Clumsy.sync (queue "${name}") threw: sync ${b.id}`,
    ].sort());
  });

  it('reads every partition of a queue registered with partitions', async () => {
    const name = uniqueQueueName('qel');
    const completed: Array<{ jobId: string; partition?: number }> = [];
    @Processor(name)
    class Work {
      @Process() run() {
        return 'ok';
      }
    }
    @QueueEventsListener(name)
    class Watcher {
      @OnQueueEvent('completed') done(args: { jobId: string; partition?: number }) {
        completed.push(args);
      }
    }
    app = await startApp({
      imports: [EchoMQModule.forRoot({ connection: testConnection() }), EchoMQModule.registerQueue({ name, partitions: 2 })],
      providers: [Work, Watcher],
    });
    const queue = producer(name, 2);
    const jobs = await queue.addBulk([0, 1, 2, 3].map((i) => ({ name: `j${i}`, data: {} })));
    await eventually(() => (completed.length === 4 ? true : undefined), 10_000, 'four completions');
    expect(completed.map((c) => c.jobId).sort()).toEqual(jobs.map((j) => j.id).sort());
    expect(new Set(completed.map((c) => c.partition))).toEqual(new Set([0, 1]));
  });

  it('refuses at init a scoped listener, and a partition count at odds with the registered queue', async () => {
    const name = uniqueQueueName('qel');
    /** Init's error; the module is closed either way (a registered queue has opened its connection). */
    const initError = async (metadata: ModuleMetadata) => {
      const moduleRef = await Test.createTestingModule(metadata).compile();
      try {
        await moduleRef.init();
        return undefined;
      } catch (error) {
        return error as Error;
      } finally {
        await moduleRef.close();
      }
    };
    @Injectable({ scope: Scope.REQUEST })
    class PerRequest {}
    @QueueEventsListener(name)
    class Scoped {
      constructor(readonly dep: PerRequest) {}
      @OnQueueEvent('completed') done() {}
    }
    expect((await initError({ imports: [EchoMQModule.forRoot({ connection: testConnection() })], providers: [PerRequest, Scoped] }))?.message)
      .toMatch(/Scoped is request- or transient-scoped/);

    @QueueEventsListener(name, { partitions: 3 })
    class Odd {}
    expect((await initError({
      imports: [EchoMQModule.forRoot({ connection: testConnection() }), EchoMQModule.registerQueue({ name, partitions: 2 })],
      providers: [Odd],
    }))?.message).toMatch(/Odd reads queue ".*" with 3 partitions, but the queue is registered with 2/);
  });
});
