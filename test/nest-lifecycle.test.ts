import 'reflect-metadata';
import { afterEach, describe, expect, it, jest } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { Test } from '@nestjs/testing';
import {
  EchoMQModule, InjectQueue, LockManager, Process, Processor, Queue, WorkerOrchestrator, getQueueToken,
  type Job, type LockEvent,
} from '../lib/index.js';
import { startApp } from './support/nest.js';
import { eventually, newClient, onCluster, queueKeys, testConnection, sleep, uniqueQueueName } from './support/redis.js';

describe('EchoMQModule lifecycle', () => {
  let app: TestingModule | undefined;
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  it('startWorkers: false keeps the app API-only until startWorkers() is called', async () => {
    const name = uniqueQueueName('manual');
    @Processor(name)
    class Later {
      @Process() run() {
        return 'ran';
      }
    }
    app = await startApp({
      imports: [EchoMQModule.forRoot({ connection: testConnection(), startWorkers: false }), EchoMQModule.registerQueue(name)],
      providers: [Later],
    });
    const queue = app.get<Queue>(getQueueToken(name), { strict: false });
    const orchestrator = app.get(WorkerOrchestrator, { strict: false });
    const job = await queue.add('x', {});
    await sleep(300);
    expect(orchestrator.getWorker(name)).toBeUndefined();
    expect(await job.getState()).toBe('waiting');
    expect(orchestrator.startWorkers().map((w) => w.name)).toEqual([name]);
    expect(orchestrator.startWorkers()).toEqual([]);
    await eventually(async () => (await job.getState()) === 'completed', 10_000, 'the job after a manual start');
  });

  it('one LockManager for the app: injectable, shared by every worker, streaming its events', async () => {
    const [a, b] = [uniqueQueueName('lm-a'), uniqueQueueName('lm-b')];
    const make = (queueName: string) => {
      @Processor({ name: queueName, lockDuration: 1500, lockRenewTime: 250 })
      class Slow {
        @Process() async run() {
          await sleep(700);
          return 'done';
        }
      }
      return Slow;
    };
    @Injectable()
    class Watcher {
      readonly events: LockEvent[] = [];
      constructor(readonly locks: LockManager) {
        locks.events$.subscribe((event) => this.events.push(event));
      }
    }
    app = await startApp({
      imports: [EchoMQModule.forRoot({ connection: testConnection() }), EchoMQModule.registerQueue(a, b)],
      providers: [make(a), make(b), Watcher],
    });
    const watcher = app.get(Watcher);
    const orchestrator = app.get(WorkerOrchestrator, { strict: false });
    expect(orchestrator.getWorker(a)!.lockManager).toBe(watcher.locks);
    expect(orchestrator.getWorker(b)!.lockManager).toBe(watcher.locks);
    const jobs = await Promise.all([a, b].map((n) => app!.get<Queue>(getQueueToken(n), { strict: false }).add('x', {})));
    await eventually(async () => (await Promise.all(jobs.map((j) => j.getState()))).every((s) => s === 'completed'), 15_000, 'both jobs');
    for (const queue of [a, b]) {
      const types = new Set(watcher.events.filter((e) => e.queue === queue).map((e) => e.type));
      expect(types).toEqual(new Set(['acquired', 'renewed', 'released']));
    }
  });

  it('on close, workers stop fetching and finish running jobs with locks renewed, which may still enqueue; then everything closes', async () => {
    const name = uniqueQueueName('drain');
    const follow = uniqueQueueName('follow');
    let release!: () => void;
    const started = new Promise<void>((resolve) => (release = resolve));
    // Renewals every 250 ms: a pause of Jest's own process up to 1250 ms does not lapse the lock.
    @Processor({ name, lockDuration: 1500, lockRenewTime: 250 })
    class Long {
      constructor(@InjectQueue(follow) private readonly next: Queue) {}
      @Process() async run(job: Job) {
        release();
        await sleep(2_000); // longer than the lock: only a renewed lock survives this
        const added = await this.next.add('after', { from: job.id }); // enqueueing during shutdown works
        return added.id;
      }
    }
    app = await startApp({ imports: [EchoMQModule.forRoot({ connection: testConnection() }), EchoMQModule.registerQueue(name, follow)], providers: [Long] });
    const queue = app.get<Queue>(getQueueToken(name), { strict: false });
    const locks = app.get(LockManager, { strict: false });
    const renewed: string[] = [];
    locks.renewed$.subscribe((event) => renewed.push(...event.jobIds));
    const job = await queue.add('long', {});
    await started;
    const closing = app.close();
    app = undefined;
    const client = newClient();
    try {
      const late = await new Queue(name, { connection: client }).add('late', {}); // added after close began: no worker takes it
      await closing;
      const stored = await new Queue(name, { connection: client }).getJob(job.id);
      expect(await stored?.getState()).toBe('completed');
      expect(renewed.filter((id) => id === job.id).length).toBeGreaterThanOrEqual(2);
      expect(await new Queue(name, { connection: client }).getJob(late.id).then((j) => j?.getState())).toBe('waiting');
      const followUp = await new Queue(follow, { connection: client }).getJob(String(stored?.returnvalue));
      expect(followUp?.data).toEqual({ from: job.id });
      expect((await queueKeys(client, name)).filter((k) => k.endsWith(':lock'))).toEqual([]);
      expect(locks.activeTimers).toBe(0);
      await ownConnectionClosed(queue);
    } finally {
      client.disconnect();
    }
  });

  it('SIGTERM with enableShutdownHooks drains the running job before the process is signalled again', async () => {
    const name = uniqueQueueName('sigterm');
    let release!: () => void;
    const started = new Promise<void>((resolve) => (release = resolve));
    @Processor({ name, lockDuration: 1000, lockRenewTime: 250 })
    class Long {
      @Process() async run() {
        release();
        await sleep(1_200);
        return 'finished';
      }
    }
    const moduleRef = await Test.createTestingModule({ imports: [EchoMQModule.forRoot({ connection: testConnection() }), EchoMQModule.registerQueue(name)], providers: [Long] }).compile();
    const nest = moduleRef.createNestApplication();
    const before = new Set(process.listeners('SIGTERM'));
    nest.enableShutdownHooks(['SIGTERM']);
    await nest.init();
    // Only Nest's own listener: other files of this jest process may listen to SIGTERM too.
    const nestListener = process.listeners('SIGTERM').find((listener) => !before.has(listener))!;
    const queue = nest.get<Queue>(getQueueToken(name), { strict: false });
    const job = await queue.add('long', {});
    await started;
    // Nest re-sends the signal to the process once it has shut down: catch that instead of dying.
    const resent = new Promise<void>((resolve) => {
      jest.spyOn(process, 'kill').mockImplementation((pid, signal) => {
        if (pid === process.pid && signal === 'SIGTERM') resolve();
        return true;
      });
    });
    const client = newClient();
    try {
      expect(nestListener).toBeDefined();
      (nestListener as (signal: string) => void)('SIGTERM');
      await resent;
      expect(await new Queue(name, { connection: client }).getJob(job.id).then((j) => j?.returnvalue)).toBe('finished');
      await ownConnectionClosed(queue);
    } finally {
      jest.restoreAllMocks();
      client.disconnect();
    }
  });
});

/**
 * The module's queue connection after close: one EchoMQ made from a URL is closed (QUIT answered,
 * the socket then closes on its own); a Cluster the caller passed (the cluster run) is the caller's
 * and stays open.
 */
async function ownConnectionClosed(queue: Queue): Promise<void> {
  if (onCluster) expect(queue.client.status).toBe('ready');
  else await eventually(() => queue.client.status === 'end', 5_000, 'the shared connection to end');
}
