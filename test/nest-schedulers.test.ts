import 'reflect-metadata';
import { afterEach, describe, expect, it, jest } from '@jest/globals';
import type { ModuleMetadata } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import {
  EchoMQModule, EchoMQOptionError, JobScheduler, Process, Processor, Queue, Worker, WorkerOrchestrator,
  type Job, type JobSchedulerDeclaration,
} from '../lib/index.js';
import { startApp } from './support/nest.js';
import { eventually, newClient, queueKeys, testConnection, uniqueQueueName } from './support/redis.js';

// Job schedulers declared in a Nest app (@JobScheduler on a processor method, registerQueue's
// `schedulers`): upserted once at bootstrap before any worker starts, left alone by a shutdown.

/** A schedule whose first slot is an hour away, the same at every boot of one test. */
const farAway = (startDate: number) => ({ every: 86_400_000, startDate });

/** Everything Redis holds of the queue's schedulers: their hashes (gen included) and their delayed jobs. */
async function schedulerState(queue: Queue) {
  const schedulers = await queue.getJobSchedulers(0, -1, true);
  const hashes = await Promise.all(schedulers.map(({ key }) => queue.client.hgetall(queue.keys.scheduler(key))));
  const delayed = await queue.getJobs('delayed');
  return { hashes, delayed: delayed.map((job) => ({ id: job.id, timestamp: job.timestamp })).sort((a, b) => a.id.localeCompare(b.id)) };
}

describe('job schedulers in a Nest app', () => {
  let app: TestingModule | undefined;
  const closers: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    jest.restoreAllMocks();
    await app?.close();
    app = undefined;
    while (closers.length) await closers.pop()!();
  });

  /** A Queue of the test's own on `name`, closed after the test. */
  const observe = (name: string, partitions?: number) => {
    const queue = new Queue(name, { connection: testConnection(), partitions });
    closers.push(() => queue.close());
    return queue;
  };

  /** Boots an app and closes it (as a deploy's instance would), leaving Redis as it made it. */
  const bootAndClose = async (metadata: ModuleMetadata) => {
    const booted = await startApp(metadata);
    await booted.close();
  };

  it('upserts decorated and configured schedulers before any worker starts, jobs named after the method', async () => {
    const name = uniqueQueueName('sched-order');
    const observer = observe(name);
    const seenAtStart: string[][] = [];
    const run = Worker.prototype.run;
    jest.spyOn(Worker.prototype, 'run').mockImplementation(async function (this: Worker) {
      // Read before the worker's first fetch: what Redis holds when the worker starts.
      seenAtStart.push((await observer.getJobSchedulers()).map((s) => s.key).sort());
      return run.call(this);
    });
    @Processor(name)
    class Reports {
      @Process('tick') @JobScheduler('every-day', farAway(Date.now() + 3_600_000)) tick() {}
      @Process('report') report() {}
    }
    app = await startApp({
      imports: [
        EchoMQModule.forRoot({ connection: testConnection() }),
        EchoMQModule.registerQueue({ name, schedulers: [{ id: 'nightly', repeat: { pattern: '0 3 * * *', tz: 'Europe/Paris' }, template: { name: 'report' } }] }),
      ],
      providers: [Reports],
    });
    await eventually(() => seenAtStart.length > 0, 5_000, 'the worker\'s start');
    expect(seenAtStart).toEqual([['every-day', 'nightly']]);
    expect(await observer.getJobScheduler('every-day')).toMatchObject({ name: 'tick', every: 86_400_000 });
    expect(await observer.getJobScheduler('nightly')).toMatchObject({ name: 'report', pattern: '0 3 * * *', tz: 'Europe/Paris' });
  });

  it('runs the jobs of a decorated schedule on the decorated method, and a configured one\'s on the handler of its template name', async () => {
    const name = uniqueQueueName('sched-run');
    const runs: Array<{ method: string; id: string; name: string; key?: string; data: unknown }> = [];
    const record = (method: string, job: Job) => runs.push({ method, id: job.id, name: job.name, key: job.repeatJobKey, data: job.data });
    @Processor(name)
    class Beats {
      @Process('beat') @JobScheduler('heartbeat', { every: 200 }) beat(job: Job) {
        record('beat', job);
      }
      @Process('audit') audit(job: Job) {
        record('audit', job);
      }
      @Process() other(job: Job) {
        record('other', job);
      }
    }
    app = await startApp({
      imports: [
        EchoMQModule.forRoot({ connection: testConnection() }),
        EchoMQModule.registerQueue({ name, schedulers: [{ id: 'audit-often', repeat: { every: 200, immediately: true }, template: { name: 'audit', data: { from: 'config' } } }] }),
      ],
      providers: [Beats],
    });
    await eventually(() => runs.filter((r) => r.method === 'beat').length >= 2 && runs.filter((r) => r.method === 'audit').length >= 2, 10_000, 'two jobs of each schedule');
    for (const beat of runs.filter((r) => r.method === 'beat')) {
      expect(beat).toMatchObject({ name: 'beat', key: 'heartbeat', id: expect.stringMatching(/^repeat:heartbeat:\d+$/) });
    }
    for (const audit of runs.filter((r) => r.method === 'audit')) {
      expect(audit).toMatchObject({ name: 'audit', key: 'audit-often', data: { from: 'config' }, id: expect.stringMatching(/^repeat:audit-often:\d+$/) });
    }
    expect(runs.filter((r) => r.method === 'other')).toEqual([]);
  });

  it('schedules a processor\'s queue that no module registers, and a partitioned one, with the processor\'s count', async () => {
    const [plain, partitioned] = [uniqueQueueName('sched-unreg'), uniqueQueueName('sched-part')];
    const ran: string[] = [];
    @Processor(plain)
    class Plain {
      @Process('ping') @JobScheduler('ping', { every: 200 }) ping(job: Job) {
        ran.push(`${plain} ${job.repeatJobKey}`);
      }
    }
    @Processor({ name: partitioned, partitions: 2 })
    class Partitioned {
      @Process('pong') @JobScheduler('pong', { every: 200 }) @JobScheduler('pong-too', { every: 200 }) pong(job: Job) {
        ran.push(`${partitioned} ${job.repeatJobKey}`);
      }
    }
    app = await startApp({ imports: [EchoMQModule.forRoot({ connection: testConnection() })], providers: [Plain, Partitioned] });
    await eventually(() => [`${plain} ping`, `${partitioned} pong`, `${partitioned} pong-too`].every((r) => ran.includes(r)), 10_000, 'a job of each schedule');
    expect((await observe(partitioned, 2).getJobSchedulers()).map((s) => s.key).sort()).toEqual(['pong', 'pong-too']);
  });

  it('app.close() leaves the schedulers and their next jobs; a second boot with the same declarations changes nothing', async () => {
    const name = uniqueQueueName('sched-boot');
    const startDate = Date.now() + 3_600_000;
    const make = () => {
      @Processor(name)
      class Nightly {
        @Process('nightly') @JobScheduler('nightly', { pattern: '0 3 * * *', tz: 'Europe/Paris' }) nightly() {}
        @Process() other() {}
      }
      return Nightly;
    };
    const metadata = () => ({
      imports: [
        EchoMQModule.forRoot({ connection: testConnection() }),
        EchoMQModule.registerQueue({ name, schedulers: [{ id: 'daily', repeat: farAway(startDate), template: { data: { n: 1 }, opts: { attempts: 2 } } }] }),
      ],
      providers: [make()],
    });
    const observer = observe(name);
    await bootAndClose(metadata());
    const afterFirst = await schedulerState(observer);
    expect(afterFirst.hashes.map((h) => h.name).sort()).toEqual(['daily', 'nightly']);
    const daily = (await observer.getJobScheduler('daily'))!;
    expect(afterFirst.delayed.map((j) => j.id)).toContain(`repeat:daily:${daily.next}`);
    expect(daily).toMatchObject({ next: startDate, template: { data: { n: 1 }, opts: { attempts: 2 } } });

    await bootAndClose(metadata());
    expect(await schedulerState(observer)).toEqual(afterFirst);
  });

  it('removeUndeclaredSchedulers removes what no declaration names; without it, an undeclared scheduler stays', async () => {
    const name = uniqueQueueName('sched-undeclared');
    const startDate = Date.now() + 3_600_000;
    const declare = (...ids: string[]): JobSchedulerDeclaration[] => ids.map((id) => ({ id, repeat: farAway(startDate) }));
    const connection = testConnection();
    const observer = observe(name);
    await bootAndClose({ imports: [EchoMQModule.forRoot({ connection }), EchoMQModule.registerQueue({ name, schedulers: declare('kept', 'dropped') })] });
    await observer.upsertJobScheduler('by-hand', farAway(startDate));
    const keys = async () => (await observer.getJobSchedulers()).map((s) => s.key).sort();
    expect(await keys()).toEqual(['by-hand', 'dropped', 'kept']);

    // The default: 'dropped' left the code, and stays in Redis with its next job.
    await bootAndClose({ imports: [EchoMQModule.forRoot({ connection }), EchoMQModule.registerQueue({ name, schedulers: declare('kept') })] });
    expect(await keys()).toEqual(['by-hand', 'dropped', 'kept']);
    expect((await observer.getJobs('delayed')).map((j) => j.id)).toContain(`repeat:dropped:${startDate}`);

    // With the switch: every scheduler no registration and no @JobScheduler of the queue declares goes, with its next job.
    @Processor(name)
    class Decorated {
      @Process('dec') @JobScheduler('decorated', farAway(startDate)) dec() {}
    }
    await bootAndClose({
      imports: [
        EchoMQModule.forRoot({ connection }),
        EchoMQModule.registerQueue({ name, schedulers: declare('kept'), removeUndeclaredSchedulers: true }),
        EchoMQModule.registerQueue(name), // another module's registration of the queue, which declares nothing
      ],
      providers: [Decorated],
    });
    expect(await keys()).toEqual(['decorated', 'kept']);
    // A scheduler keeps the jobs of its next two slots: the removed ones' are gone too.
    const slots = [startDate, startDate + 86_400_000];
    expect((await observer.getJobs('delayed')).map((j) => j.id).sort()).toEqual(['decorated', 'kept'].flatMap((id) => slots.map((slot) => `repeat:${id}:${slot}`)));
  });

  describe('a bad declaration fails the bootstrap, naming the field, with nothing written and no worker started', () => {
    /** Boots, expecting a refusal; what it threw, after checking Redis holds nothing of the queue. */
    async function refusal(name: string, metadata: ModuleMetadata): Promise<Error> {
      const moduleRef = await Test.createTestingModule(metadata).compile();
      try {
        const refused = await moduleRef.init().then(() => undefined, (error: unknown) => error);
        expect(refused).toBeInstanceOf(Error);
        expect(moduleRef.get(WorkerOrchestrator).getWorkers().size).toBe(0);
        return refused as Error;
      } finally {
        await moduleRef.close();
        const client = newClient();
        try {
          expect(await queueKeys(client, name)).toEqual([]);
        } finally {
          client.disconnect();
        }
      }
    }
    const root = () => EchoMQModule.forRoot({ connection: testConnection() });
    const good: JobSchedulerDeclaration = { id: 'good', repeat: { every: 60_000 } };

    it('a decorator\'s repeat, with the scheduler, queue and method in the message', async () => {
      const name = uniqueQueueName('sched-bad');
      @Processor(name)
      class Broken {
        @Process('fine') @JobScheduler('fine', { every: 60_000 }) fine() {}
        @Process('tick') @JobScheduler('ticker', { every: -5 }) tick() {}
      }
      const error = await refusal(name, { imports: [root(), EchoMQModule.registerQueue({ name, schedulers: [good] })], providers: [Broken] });
      expect(error).toBeInstanceOf(EchoMQOptionError);
      expect((error as EchoMQOptionError).field).toBe('repeat.every');
      expect(error.message).toMatch(new RegExp(`^repeat\\.every: must be a whole number of ms above 0, got -5 \\(job scheduler "ticker" of queue "${name}", declared by @JobScheduler on Broken\\.tick\\)$`));
    });

    it.each([
      ['schedulers[1].repeat.pattern', [good, { id: 'cron', repeat: { pattern: 'not a cron' } }]],
      ['schedulers[0].repeat.cron', [{ id: 'cron', repeat: { cron: '* * * * *' } }]],
      ['schedulers[0].template.opts.jobId', [{ id: 'fixed', repeat: { every: 1000 }, template: { opts: { jobId: 'x' } } }]],
      ['schedulers[0].repeat.endDate', [{ id: 'backwards', repeat: { every: 1000, startDate: Date.now() + 60_000, endDate: Date.now() + 30_000 } }]],
      ['schedulers[0].id', [{ id: 'a:1', repeat: { every: 1000 } }]],
      ['schedulers[1].id', [good, good]],
      ['schedulers[0]', ['nightly']],
      ['schedulers', { id: 'not-a-list' }],
    ])('registerQueue\'s %s', async (field, schedulers) => {
      const name = uniqueQueueName('sched-bad');
      const error = await refusal(name, { imports: [root(), EchoMQModule.registerQueue({ name, schedulers: schedulers as JobSchedulerDeclaration[] })] });
      expect(error).toBeInstanceOf(EchoMQOptionError);
      expect((error as EchoMQOptionError).field).toBe(field);
      expect(error.message).toContain(`queue "${name}"`);
    });

    it('registerQueueAsync\'s, and a removeUndeclaredSchedulers that is no boolean', async () => {
      const name = uniqueQueueName('sched-bad');
      const error = await refusal(name, {
        imports: [root(), EchoMQModule.registerQueueAsync({ name, useFactory: () => ({ schedulers: [{ id: 'x', repeat: { every: 0 } }] }) })],
      });
      expect((error as EchoMQOptionError).field).toBe('schedulers[0].repeat.every');
      expect(error.message).toContain('registerQueueAsync');
      const other = uniqueQueueName('sched-bad');
      const refused = await refusal(other, { imports: [root(), EchoMQModule.registerQueue({ name: other, schedulers: [good], removeUndeclaredSchedulers: 'yes' as never })] });
      expect((refused as EchoMQOptionError).field).toBe('removeUndeclaredSchedulers');
    });

    it('one id declared twice on a queue: by a decorator and a registration', async () => {
      const name = uniqueQueueName('sched-bad');
      @Processor(name)
      class Twice {
        @Process('a') @JobScheduler('good', { every: 5_000 }) a() {}
      }
      const error = await refusal(name, { imports: [root(), EchoMQModule.registerQueue({ name, schedulers: [good] })], providers: [Twice] });
      expect((error as EchoMQOptionError).field).toBe('id');
      expect(error.message).toMatch(/job scheduler "good" of queue ".*" is declared twice, in registerQueue\(".*"\)\.schedulers\[0\] and declared by @JobScheduler on Twice\.a/);
    });

    it('a decorator whose jobs would not reach its method, or whose method handles several names', async () => {
      const name = uniqueQueueName('sched-bad');
      @Processor(name)
      class Elsewhere {
        @Process('a') @JobScheduler('s', { every: 1000 }, { name: 'b' }) a() {}
        @Process('b') b() {}
      }
      const error = await refusal(name, { imports: [root()], providers: [Elsewhere] });
      expect((error as EchoMQOptionError).field).toBe('template.name');
      expect(error.message).toMatch(/names its jobs "b", which Elsewhere\.b handles/);

      @Processor(name)
      class Several {
        @Process('a') @Process('b') @JobScheduler('s', { every: 1000 }) ab() {}
      }
      const several = await refusal(name, { imports: [root()], providers: [Several] });
      expect((several as EchoMQOptionError).field).toBe('template.name');
      expect(several.message).toMatch(/handles several job names/);

      @Processor(name)
      class Chosen {
        @Process('a') @Process('b') @JobScheduler('s', { every: 60_000 }, { name: 'b' }) ab() {}
      }
      app = await startApp({ imports: [root()], providers: [Chosen] });
      expect(await observe(name).getJobScheduler('s')).toMatchObject({ name: 'b' });
    });

    it('a @JobScheduler on a method without @Process, or outside a processor', async () => {
      const name = uniqueQueueName('sched-bad');
      @Processor(name)
      class NoHandler {
        @Process() run() {}
        @JobScheduler('s', { every: 1000 }) helper() {}
      }
      expect((await refusal(name, { imports: [root()], providers: [NoHandler] })).message).toMatch(/on NoHandler\.helper, which has no @Process/);
      class NotAProcessor {
        @JobScheduler('s', { every: 1000 }) helper() {}
      }
      expect((await refusal(name, { imports: [root()], providers: [NotAProcessor] })).message).toMatch(/NotAProcessor is no @Processor/);
    });
  });
});
