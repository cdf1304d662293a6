import 'reflect-metadata';
import { afterEach, describe, expect, it, jest } from '@jest/globals';
import { Inject, Injectable, Module } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import {
  EchoMQModule, InjectQueue, Process, Processor, Queue, WorkerOrchestrator, getQueueToken,
  type ConnectionInput, type EchoMQOptionsFactory, type EchoMQQueueOptionsFactory, type EchoMQRootOptions, type Job,
} from '../lib/index.js';
import { startApp } from './support/nest.js';
import { eventually, newClient, queueKeys, testConnection, uniqueQueueName } from './support/redis.js';

const SETTINGS = 'SETTINGS';

/** Stands in for a ConfigModule: a provider the async factories inject. */
@Module({ providers: [{ provide: SETTINGS, useFactory: () => ({ connection: testConnection(), attempts: 3 }) }], exports: [SETTINGS] })
class SettingsModule {}

describe('EchoMQModule registration', () => {
  let app: TestingModule | undefined;
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  it('registerQueue in two modules yields one Queue, injected by @InjectQueue and by token', async () => {
    const name = uniqueQueueName('shared');
    @Injectable()
    class Producer {
      constructor(@InjectQueue(name) readonly queue: Queue) {}
    }
    @Module({ imports: [EchoMQModule.registerQueue(name)], providers: [Producer], exports: [Producer] })
    class FeatureA {}
    @Module({ imports: [EchoMQModule.registerQueue({ name })] })
    class FeatureB {}
    app = await startApp({ imports: [EchoMQModule.forRoot({ connection: testConnection() }), FeatureA, FeatureB] });
    const byToken = app.get<Queue>(getQueueToken(name), { strict: false });
    expect(byToken).toBeInstanceOf(Queue);
    expect(app.get(Producer, { strict: false }).queue).toBe(byToken);
    const job = await byToken.add('hello', { n: 1 });
    expect(await job.getState()).toBe('waiting');
  });

  it('forRoot(configKey, options) gives a named configuration its own prefix, queues and processors', async () => {
    const name = uniqueQueueName('named');
    @Processor({ name, configKey: 'other' })
    class OtherProcessor {
      @Process() handle(job: Job<{ n: number }>) {
        return job.data.n * 2;
      }
    }
    app = await startApp({
      imports: [
        EchoMQModule.forRoot({ connection: testConnection() }),
        EchoMQModule.forRoot('other', { connection: testConnection(), prefix: 'other' }),
        EchoMQModule.registerQueue({ name, configKey: 'other' }),
      ],
      providers: [OtherProcessor],
    });
    const queue = app.get<Queue>(getQueueToken(name), { strict: false });
    expect(queue.keys.prefix).toBe('other');
    const job = await queue.add('double', { n: 21 });
    await eventually(async () => (await queue.getJob(job.id))?.returnvalue === 42, 10_000, 'the job on the named configuration');
    const client = newClient();
    try {
      expect((await queueKeys(client, name, 'other')).length).toBeGreaterThan(0);
      expect(await queueKeys(client, name, 'emq')).toEqual([]);
    } finally {
      client.disconnect();
    }
  });

  it('forRootAsync with useFactory, imports, inject and extraProviders', async () => {
    const name = uniqueQueueName('async');
    app = await startApp({
      imports: [
        EchoMQModule.forRootAsync({
          imports: [SettingsModule],
          inject: [SETTINGS, 'EXTRA'],
          extraProviders: [{ provide: 'EXTRA', useValue: { attempts: 2 } }],
          useFactory: (settings: { connection: ConnectionInput }, extra: { attempts: number }): EchoMQRootOptions => ({
            connection: settings.connection,
            defaultJobOptions: { attempts: extra.attempts },
          }),
        }),
        EchoMQModule.registerQueue(name),
      ],
    });
    const job = await app.get<Queue>(getQueueToken(name), { strict: false }).add('x', {});
    expect(job.opts.attempts).toBe(2);
  });

  it('forRootAsync with useClass calls the class factory; useExisting reuses a provider', async () => {
    const created = jest.fn();
    @Injectable()
    class RootOptions implements EchoMQOptionsFactory {
      constructor(@Inject(SETTINGS) private readonly settings: { connection: ConnectionInput }) {}
      createEchoMQOptions(): EchoMQRootOptions {
        created();
        return { connection: this.settings.connection, prefix: 'cls' };
      }
    }
    @Module({ imports: [SettingsModule], providers: [RootOptions], exports: [RootOptions] })
    class RootOptionsModule {}
    const a = uniqueQueueName('cls');
    const b = uniqueQueueName('existing');
    app = await startApp({
      imports: [
        EchoMQModule.forRootAsync({ imports: [SettingsModule], useClass: RootOptions }),
        EchoMQModule.forRootAsync({ configKey: 'existing', imports: [RootOptionsModule], useExisting: RootOptions }),
        EchoMQModule.registerQueue(a, { name: b, configKey: 'existing' }),
      ],
    });
    expect(created).toHaveBeenCalledTimes(2);
    expect(app.get<Queue>(getQueueToken(a), { strict: false }).keys.prefix).toBe('cls');
    expect(app.get<Queue>(getQueueToken(b), { strict: false }).keys.prefix).toBe('cls');
  });

  it('registerQueueAsync resolves its queue from useFactory and from useClass', async () => {
    const a = uniqueQueueName('qf');
    const b = uniqueQueueName('qc');
    const created = jest.fn();
    @Injectable()
    class QueueSettings implements EchoMQQueueOptionsFactory {
      createQueueOptions() {
        created();
        return { defaultJobOptions: { priority: 7 } };
      }
    }
    app = await startApp({
      imports: [
        EchoMQModule.forRoot({ connection: testConnection() }),
        EchoMQModule.registerQueueAsync(
          { name: a, imports: [SettingsModule], inject: [SETTINGS], useFactory: (s: { attempts: number }) => ({ defaultJobOptions: { attempts: s.attempts } }) },
          { name: b, useClass: QueueSettings },
        ),
      ],
    });
    expect(created).toHaveBeenCalledTimes(1);
    expect((await app.get<Queue>(getQueueToken(a), { strict: false }).add('x', {})).opts.attempts).toBe(3);
    expect((await app.get<Queue>(getQueueToken(b), { strict: false }).add('x', {})).opts.priority).toBe(7);
  });

  it('refuses a registerQueueAsync without a name, or without a factory, with a clear error', () => {
    expect(() => EchoMQModule.registerQueueAsync({ useFactory: () => ({}) } as never)).toThrow(/needs a queue name/);
    expect(() => EchoMQModule.registerQueueAsync({ name: 'x' })).toThrow(/useFactory, useClass or useExisting/);
  });

  it('a queue or processor on a configuration nobody declared fails at init, naming it', async () => {
    const name = uniqueQueueName('nocfg');
    await expect(startApp({ imports: [EchoMQModule.forRoot({ connection: testConnection() }), EchoMQModule.registerQueue({ name, configKey: 'missing' })] }))
      .rejects.toThrow(/configuration "missing".*forRoot\("missing"/);
  });

  it('exposes the orchestrator with one worker per processor, options from root defaults and the decorator', async () => {
    const name = uniqueQueueName('opts');
    @Processor({ name, concurrency: 3 })
    class Tuned {
      @Process() run() {
        return 1;
      }
    }
    app = await startApp({
      imports: [EchoMQModule.forRoot({ connection: testConnection(), worker: { lockDuration: 4000, concurrency: 1, prefetch: 1 } })],
      providers: [Tuned],
    });
    const worker = app.get(WorkerOrchestrator, { strict: false }).getWorker(name)!;
    expect(worker.options.concurrency).toBe(3);
    expect(worker.options.prefetch).toBe(1);
    expect(worker.options.lockDuration).toBe(4000);
    expect(worker.options.lockRenewTime).toBe(2000);
  });

  it('takes settings.backoffStrategy from the root worker defaults, or from @Processor, whose own wins', async () => {
    const [rooted, own] = [uniqueQueueName('bo-root'), uniqueQueueName('bo-own')];
    const asked: string[] = [];
    const giveUp = (_n: number, type: string) => { asked.push(`root:${type}`); return -1; };
    const retryNow = (_n: number, type: string) => { asked.push(`own:${type}`); return 0; };
    @Processor(rooted)
    class Rooted {
      @Process() run(job: Job) {
        if (job.attemptsMade === 0) throw new Error('first try fails');
        return 'second try';
      }
    }
    @Processor({ name: own, settings: { backoffStrategy: retryNow } })
    class Own {
      @Process() run(job: Job) {
        if (job.attemptsMade === 0) throw new Error('first try fails');
        return 'second try';
      }
    }
    app = await startApp({
      imports: [EchoMQModule.forRoot({ connection: testConnection(), worker: { settings: { backoffStrategy: giveUp } } })],
      providers: [Rooted, Own],
    });
    const orchestrator = app.get(WorkerOrchestrator, { strict: false });
    expect(orchestrator.getWorker(rooted)!.options.backoffStrategy).toBe(giveUp);
    expect(orchestrator.getWorker(own)!.options.backoffStrategy).toBe(retryNow);
    const [rootedQueue, ownQueue] = [new Queue(rooted, { connection: testConnection() }), new Queue(own, { connection: testConnection() })];
    try {
      const a = await rootedQueue.add('a', {}, { attempts: 3, backoff: { type: 'custom' } });
      const b = await ownQueue.add('b', {}, { attempts: 3, backoff: { type: 'custom' } });
      const finished = async (queue: Queue, id: string) => {
        const state = await (await queue.getJob(id))?.getState();
        return state === 'completed' || state === 'failed' ? queue.getJob(id) : undefined;
      };
      const [failed, completed] = await Promise.all([
        eventually(() => finished(rootedQueue, a.id), 10_000, 'the job of the root strategy'),
        eventually(() => finished(ownQueue, b.id), 10_000, "the job of the processor's strategy"),
      ]);
      expect([await failed!.getState(), failed!.attemptsMade, failed!.failedReason]).toEqual(['failed', 1, 'first try fails']);
      expect([await completed!.getState(), completed!.returnvalue]).toEqual(['completed', 'second try']);
      expect(asked.sort()).toEqual(['own:custom', 'root:custom']);
    } finally {
      await Promise.all([rootedQueue.close(), ownQueue.close()]);
    }
  });

  it('refuses at init a @Processor whose settings.backoffStrategy is not a function', async () => {
    @Processor({ name: uniqueQueueName('bo-bad'), settings: { backoffStrategy: 'exponential' as never } })
    class Misconfigured {
      @Process() run() {
        return 1;
      }
    }
    const moduleRef = await Test.createTestingModule({ imports: [EchoMQModule.forRoot({ connection: testConnection() })], providers: [Misconfigured] }).compile();
    try {
      const refused = await moduleRef.init().then(() => undefined, (error: unknown) => error);
      expect((refused as Error).message).toMatch(/processor Misconfigured: settings\.backoffStrategy: must be a function/);
      expect(moduleRef.get(WorkerOrchestrator).getWorkers().size).toBe(0); // no worker started
    } finally {
      await moduleRef.close(); // the refused init leaves the configuration's connection to close
    }
  });
});
