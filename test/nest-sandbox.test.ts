import 'reflect-metadata';
import { afterEach, describe, expect, it } from '@jest/globals';
import { Injectable, Scope } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { fileURLToPath } from 'node:url';
import { EchoMQModule, EchoMQOptionError, JobScheduler, OnWorkerEvent, Process, Processor, Queue, WorkerOrchestrator, type Job } from '../lib/index.js';
import { sandboxPoolOf } from '../lib/internal.js';
import { startApp } from './support/nest.js';
import { eventually, testConnection, uniqueQueueName } from './support/redis.js';

const PROCESSOR = new URL('./fixtures/sandbox/processor.mjs', import.meta.url);

/** Whether a process is still there (a child's pid; a worker drops a child once it exited and was reaped). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** A service of the app: what the sandbox cannot reach, the @OnWorkerEvent methods can. */
@Injectable()
class Ledger {
  readonly entries: string[] = [];
  record(entry: string) {
    this.entries.push(entry);
  }
}

describe('@Processor({ sandbox })', () => {
  let app: TestingModule | undefined;
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  it.each([
    ['worker threads', true],
    ['child processes', false],
  ])('runs the file in %s, keeps the lock of a handler that blocks its thread, and calls @OnWorkerEvent methods with their dependencies', async (_kind, useWorkerThreads) => {
    const name = uniqueQueueName('nest-sandbox');
    // The handler blocks for 3 s, twice the lock: only renewals keep it (test/sandbox.test.ts holds
    // one for 10 x lockDuration). Renewing every 250 ms leaves 1250 ms for a pause of this process,
    // which runs the heartbeat: late in a run-in-band suite Jest's heap is past 1.5 GB and its
    // collections pause it (CI once saw a 500 ms lock renewed every 250 ms lapse here).
    @Processor({ name, lockDuration: 1500, lockRenewTime: 250, stalledInterval: 500, sandbox: { file: PROCESSOR, useWorkerThreads } })
    class Resize {
      constructor(private readonly ledger: Ledger) {}
      @OnWorkerEvent('completed') completed(job: Job, result: { busy: number; pid: number }) {
        this.ledger.record(`completed ${job.id} after ${result.busy} ms in ${result.pid === process.pid ? 'this process' : 'another process'}`);
      }
      @OnWorkerEvent('stalled') stalled(jobId: string) {
        this.ledger.record(`stalled ${jobId}`);
      }
    }
    app = await startApp({ imports: [EchoMQModule.forRoot({ connection: testConnection() })], providers: [Resize, Ledger] });
    const queue = new Queue(name, { connection: testConnection() });
    try {
      const job = await queue.add('busy', { mode: 'busy', ms: 3000 });
      const ledger = app.get(Ledger);
      await eventually(() => ledger.entries.length > 0, 10_000, 'the completed event');
      expect(ledger.entries).toEqual([`completed ${job.id} after 3000 ms in ${useWorkerThreads ? 'this process' : 'another process'}`]);
      expect((await queue.getJob(job.id))?.attemptsStarted).toBe(1);
      expect(app.get(WorkerOrchestrator).getWorker(name)?.options.concurrency).toBe(1);
    } finally {
      await queue.close();
    }
    const pool = sandboxPoolOf(app.get(WorkerOrchestrator).getWorker(name)!)!;
    expect(pool.size).toBe(1);
    const ids = pool.ids;
    await app.close();
    app = undefined;
    // The app's shutdown closed the worker, and the worker its sandboxes: each exited.
    expect(pool.size).toBe(0);
    if (!useWorkerThreads) for (const pid of ids) expect(alive(pid)).toBe(false);
  }, 20_000);

  it('refuses at init a sandboxed processor with @Process methods: they would never run', async () => {
    const name = uniqueQueueName('nest-sandbox');
    @Processor({ name, sandbox: { file: PROCESSOR } })
    class Both {
      @Process('resize') resize() {}
      @Process() other() {}
    }
    await expect(startApp({ imports: [EchoMQModule.forRoot({ connection: testConnection() })], providers: [Both] }))
      .rejects.toThrow(/Both names a sandbox file, which runs every job of its queue, so its @Process methods \(resize, other\) would never run/);
  });

  it('refuses at init a sandboxed processor with a scope: no instance of the class runs a job', async () => {
    const name = uniqueQueueName('nest-sandbox');
    @Processor({ name, scope: Scope.REQUEST, sandbox: { file: PROCESSOR } })
    class Scoped {
      @OnWorkerEvent('completed') completed() {}
    }
    await expect(startApp({ imports: [EchoMQModule.forRoot({ connection: testConnection() })], providers: [Scoped] }).then((started) => (app = started)))
      .rejects.toThrow(/processor Scoped names a sandbox file and scope REQUEST: its jobs run in the file, .* remove scope/);
  });

  it('refuses at init a @JobScheduler on a sandboxed processor, saying the sandbox runs its jobs and where schedules go', async () => {
    const name = uniqueQueueName('nest-sandbox');
    @Processor({ name, sandbox: { file: PROCESSOR } })
    class Scheduled {
      @JobScheduler('nightly', { pattern: '0 3 * * *' }) nightly() {}
    }
    await expect(startApp({ imports: [EchoMQModule.forRoot({ connection: testConnection() })], providers: [Scheduled] }).then((started) => (app = started)))
      .rejects.toThrow(/@JobScheduler\("nightly"\) is on Scheduled\.nightly, but Scheduled names a sandbox file, which runs every job of its queue, .*registerQueue\(\{ schedulers \}\)/);
  });

  it('refuses at init a sandbox file that is not there, naming sandbox.file and the class', async () => {
    const name = uniqueQueueName('nest-sandbox');
    const missing = fileURLToPath(new URL('./fixtures/sandbox/missing.mjs', import.meta.url));
    @Processor({ name, sandbox: { file: missing, gracePeriod: 100 } })
    class Missing {}
    let refused: unknown;
    try {
      app = await startApp({ imports: [EchoMQModule.forRoot({ connection: testConnection() })], providers: [Missing] });
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(EchoMQOptionError);
    expect(refused).toMatchObject({ field: 'sandbox.file' });
    expect((refused as Error).message).toMatch(/^sandbox\.file: processor Missing: cannot read .*missing\.mjs: ENOENT$/);

    @Processor({ name, sandbox: { file: PROCESSOR, gracePeriod: -5 } })
    class BadGrace {}
    await expect(startApp({ imports: [EchoMQModule.forRoot({ connection: testConnection() })], providers: [BadGrace] }))
      .rejects.toMatchObject({ field: 'sandbox.gracePeriod' });

    @Processor({ name, sandbox: { file: PROCESSOR, useWorkerThreads: true, workerThreadsOptions: { resourceLimits: { maxOldGenerationSizeMb: -1 } } } })
    class BadLimit {}
    await expect(startApp({ imports: [EchoMQModule.forRoot({ connection: testConnection() })], providers: [BadLimit] }))
      .rejects.toMatchObject({ field: 'sandbox.workerThreadsOptions.resourceLimits.maxOldGenerationSizeMb', message: expect.stringMatching(/^sandbox\.workerThreadsOptions\.resourceLimits\.maxOldGenerationSizeMb: processor BadLimit: must be a number of MB above 0/) });
  });
});
