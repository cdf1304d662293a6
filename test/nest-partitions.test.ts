import 'reflect-metadata';
import { afterEach, describe, expect, it } from '@jest/globals';
import { Injectable, Module } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import {
  EchoMQModule, EchoMQOptionError, InjectQueue, Process, Processor, Queue, QueueEvents, WorkerOrchestrator, type Job,
} from '../lib/index.js';
import { startApp } from './support/nest.js';
import { eventually, newClient, testConnection, uniqueQueueName } from './support/redis.js';

// A partitioned queue in a Nest app: registerQueue's `partitions` reaches the Queue, and the
// queue's @Processor runs a Worker with the same count (or is refused when it says otherwise).

const partitionOfId = (jobId: string) => Number(jobId.split('-')[0]);

describe('a partitioned queue in a Nest app', () => {
  let app: TestingModule | undefined;
  const closers: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    await app?.close();
    app = undefined;
    while (closers.length) await closers.pop()!();
  });

  it('adds through the injected queue and processes with a decorated processor, across every partition', async () => {
    const name = uniqueQueueName('nest-part');
    const ran = new Set<number>();
    @Processor({ name, concurrency: 4 }) // no count: it takes the registered queue's
    class Orders {
      @Process('charge') charge(job: Job<{ cents: number }>) {
        ran.add(partitionOfId(job.id));
        return { charged: job.data.cents, partition: partitionOfId(job.id) };
      }
    }
    @Injectable()
    class Checkout {
      constructor(@InjectQueue(name) readonly queue: Queue) {}
      charge(cents: number, customer: string) {
        return this.queue.add('charge', { cents }, { partitionKey: customer });
      }
    }
    @Module({ imports: [EchoMQModule.registerQueue({ name, partitions: 4 })], providers: [Checkout, Orders] })
    class OrdersModule {}
    app = await startApp({ imports: [EchoMQModule.forRoot({ connection: testConnection() }), OrdersModule] });

    const checkout = app.get(Checkout, { strict: false });
    expect(checkout.queue.partitions).toBe(4);
    const worker = app.get(WorkerOrchestrator).getWorker(name)!;
    expect(worker.partitionKeys.map((keys) => keys.queueName)).toEqual([0, 1, 2, 3].map((i) => `${name}#${i}`));

    const events = new QueueEvents(name, { connection: testConnection(), partitions: 4 });
    closers.push(() => events.close());
    await events.waitUntilReady();
    const jobs = await Promise.all(Array.from({ length: 12 }, (_, n) => checkout.charge(100 + n, `customer-${n}`)));
    const results = await Promise.all(jobs.map((job) => job.waitUntilFinished(events, 10_000)));
    expect(results).toEqual(jobs.map((job) => ({ charged: (job.data as { cents: number }).cents, partition: partitionOfId(job.id) })));
    expect(ran.size).toBeGreaterThanOrEqual(3); // twelve customers: jobs in at least three of the four partitions
    expect(await checkout.queue.getJobCounts('completed')).toEqual({ completed: 12 });
  });

  it('lets a processor repeat the queue\'s count, and take its own for a queue no module registered', async () => {
    const registered = uniqueQueueName('nest-part');
    const unregistered = uniqueQueueName('nest-part');
    @Processor({ name: registered, partitions: 3, partitionConcurrency: 1 })
    class Repeats {
      @Process() run(job: Job) {
        return job.id;
      }
    }
    @Processor({ name: unregistered, partitions: 2 })
    class OwnCount {
      @Process() run(job: Job) {
        return job.id;
      }
    }
    app = await startApp({
      imports: [EchoMQModule.forRoot({ connection: testConnection() }), EchoMQModule.registerQueue({ name: registered, partitions: 3 })],
      providers: [Repeats, OwnCount],
    });
    const orchestrator = app.get(WorkerOrchestrator);
    expect(orchestrator.getWorker(registered)!.partitionKeys).toHaveLength(3);
    expect(orchestrator.getWorker(registered)!.options.partitionConcurrency).toBe(1);
    expect(orchestrator.getWorker(unregistered)!.partitionKeys).toHaveLength(2);

    const outside = new Queue(unregistered, { connection: testConnection(), partitions: 2 });
    closers.push(async () => {
      await outside.obliterate({ force: true });
      await outside.close();
    });
    const jobs = await Promise.all([outside.add('a', {}), outside.add('b', {})]);
    expect(new Set(jobs.map((job) => partitionOfId(job.id))).size).toBe(2);
    await eventually(async () => (await outside.getJobCounts('completed')).completed === 2, 10_000, 'both jobs done by the processor');
  });

  it('refuses at init a processor whose count contradicts its registered queue\'s, naming the field', async () => {
    const name = uniqueQueueName('nest-part');
    @Processor({ name, partitions: 2 })
    class Mismatched {
      @Process() run() {}
    }
    const moduleRef = await Test.createTestingModule({
      imports: [EchoMQModule.forRoot({ connection: testConnection() }), EchoMQModule.registerQueue({ name, partitions: 4 })],
      providers: [Mismatched],
    }).compile();
    try {
      const refused = await moduleRef.init().then(() => undefined, (error: unknown) => error);
      expect(refused).toBeInstanceOf(EchoMQOptionError);
      expect((refused as EchoMQOptionError).field).toBe('partitions');
      expect((refused as Error).message).toMatch(new RegExp(`Mismatched gives 2 for queue "${name}", which is registered with 4`));
      expect(moduleRef.get(WorkerOrchestrator).getWorkers().size).toBe(0); // no worker started
    } finally {
      await moduleRef.close();
    }
  });

  it('refuses two registrations of one queue with different counts', async () => {
    const name = uniqueQueueName('nest-part');
    const connection = newClient(); // ours: the failed compile leaves nothing else to close it
    @Module({ imports: [EchoMQModule.registerQueue({ name, partitions: 4 })] })
    class FeatureA {}
    @Module({ imports: [EchoMQModule.registerQueue({ name })] })
    class FeatureB {}
    try {
      const refused = await Test.createTestingModule({ imports: [EchoMQModule.forRoot({ connection }), FeatureA, FeatureB] }).compile()
        .then((moduleRef) => moduleRef.close(), (error: unknown) => error);
      expect(refused).toBeInstanceOf(EchoMQOptionError);
      expect((refused as Error).message).toMatch(new RegExp(`queue "${name}" is registered with \\d and with \\d`));
    } finally {
      await connection.quit();
    }
  });
});
