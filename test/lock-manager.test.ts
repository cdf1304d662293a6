import { afterAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import {
  EchoMQOptionError, forQueue, forWorker, Keys, LockLostError, LockManager, Queue, Worker,
  type HeartbeatErrorEvent, type HeartbeatLateEvent, type LockEvent, type LockRenewalFailedEvent, type LockRenewedEvent,
} from '../lib/index.js';
import { SCRIPTS, Scripts } from '../lib/internal.js';
import { eventually, masters, newClient, onCluster, sleep, testConnection, uniqueQueueName } from './support/redis.js';
import { startRedis } from './support/redis-process.js';
import { monitorCommands } from './support/monitor.js';
import { Periodic } from '../lib/runtime/core/periodic.js';

/** A processor that holds its job until the test lets it go (or its signal aborts). */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  const processor = async (_job: unknown, { signal }: { signal: AbortSignal }) => {
    await new Promise<void>((resolve, reject) => {
      void opened.then(resolve);
      signal.addEventListener('abort', () => reject(signal.reason));
    });
    return 'done';
  };
  return { open, processor };
}

function collect<T>(source: { subscribe(fn: (e: T) => void): { unsubscribe(): void } }): T[] {
  const seen: T[] = [];
  source.subscribe((event) => seen.push(event));
  return seen;
}

function timeouts(): number {
  return process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;
}

describe('LockManager: the heartbeat', () => {
  const client = newClient();
  afterAll(() => client.quit());

  it('keeps the lock and token of a job running several lockDurations; the TTL never reaches 0', async () => {
    const name = uniqueQueueName('long');
    const queue = new Queue(name, { connection: testConnection() });
    const lockKey = (id: string) => new Keys(name).lock(id);
    const samples: Array<{ holder: string | null; pttl: number }> = [];
    let token = '';
    const worker = new Worker(name, async (job, context) => {
      token = context.token;
      const until = Date.now() + 3500;
      while (Date.now() < until) {
        const [holder, pttl] = await Promise.all([client.get(lockKey(job.id)), client.pttl(lockKey(job.id))]);
        samples.push({ holder, pttl });
        await sleep(100);
      }
      return 'ok';
    }, { connection: testConnection(), lockDuration: 1000 });
    const renewed = collect<LockRenewedEvent>(worker.lockManager.renewed$);
    const completed = new Promise((resolve) => worker.once('completed', (_j, result) => resolve(result)));
    await queue.add('long', {});
    expect(await completed).toBe('ok');
    expect(samples.length).toBeGreaterThan(10);
    for (const sample of samples) {
      expect(sample.holder).toBe(token);
      expect(sample.pttl).toBeGreaterThan(0);
    }
    expect(renewed.length).toBeGreaterThanOrEqual(3); // 3.5 s at a 500 ms renew interval, on a loaded machine
    await eventually(() => worker.lockManager.trackedCount() === 0, 5000, 'nothing tracked once the job ended');
    // The worker's one timer goes on while it runs, holding nothing: its ticks carry its registry
    // entry and the read of the queue's limits (docs/limits.md); it stops with the worker.
    expect(worker.lockManager.activeTimers).toBe(1);
    await worker.close();
    expect(worker.lockManager.activeTimers).toBe(0);
    await queue.close();
  });

  it('a foreign token in the lock: the next renewal reports -6 and the signal aborts with the reason', async () => {
    const name = uniqueQueueName('foreign');
    const queue = new Queue(name, { connection: testConnection() });
    const { processor } = gate();
    const worker = new Worker(name, processor, { connection: testConnection(), lockDuration: 5000, lockRenewTime: 300 });
    const failed = collect<LockRenewalFailedEvent>(worker.lockManager.renewalFailed$);
    const lockLost = new Promise<Error>((resolve) => worker.once('lockLost', (_job, error) => resolve(error)));
    let completed = 0;
    worker.on('completed', () => completed++);
    const job = await queue.add('x', {});
    await eventually(() => worker.lockManager.trackedCount() === 1, 5000, 'the job tracked');
    await client.set(new Keys(name).lock(job.id), 'someone-else', 'PX', 10_000);

    const error = await lockLost;
    expect(error).toBeInstanceOf(LockLostError);
    expect((error as LockLostError).code).toBe(-6);
    expect(error.message).toMatch(/another worker/);
    expect(failed).toEqual([expect.objectContaining({ type: 'renewalFailed', queue: name, workerId: worker.id, jobId: job.id, code: -6 })]);
    expect(completed).toBe(0);
    expect(await client.get(new Keys(name).lock(job.id))).toBe('someone-else'); // the loser changed nothing
    expect(worker.lockManager.trackedCount()).toBe(0);
    await worker.close();
    await queue.close();
  });

  it('a handler that first reads its signal after the loss gets it already aborted, with the reason', async () => {
    const name = uniqueQueueName('late-signal');
    const queue = new Queue(name, { connection: testConnection() });
    let signalLoss!: () => void;
    const lost = new Promise<void>((resolve) => (signalLoss = resolve));
    let seen: [boolean, unknown] | undefined;
    const worker = new Worker(name, async (_job, context) => {
      await lost; // the signal is not read until the lock is gone
      seen = [context.signal.aborted, context.signal.reason];
    }, { connection: testConnection(), lockDuration: 5000, lockRenewTime: 300 });
    worker.lockManager.renewalFailed$.subscribe(() => signalLoss());
    const lockLost = new Promise<void>((resolve) => worker.once('lockLost', () => resolve()));
    const job = await queue.add('x', {});
    await eventually(() => worker.lockManager.trackedCount() === 1, 5000, 'the job tracked');
    await client.set(new Keys(name).lock(job.id), 'someone-else', 'PX', 10_000);
    await lockLost;
    expect(seen?.[0]).toBe(true);
    expect(seen?.[1]).toBeInstanceOf(LockLostError);
    expect((seen?.[1] as LockLostError).code).toBe(-6);
    await worker.close();
    await queue.close();
  });

  it('renews 1,000 held jobs with ONE extendLocks-1 call per tick, from one timer', async () => {
    // The calls are counted on a private redis-server, where no other test's commands land; the
    // cluster run counts on the run's Cluster, summed over its masters (one file runs at a time).
    const redis = onCluster ? undefined : await startRedis();
    const admin = redis ? new Redis(redis.url) : newClient();
    const connection = redis?.url ?? testConnection();
    const name = uniqueQueueName('thousand');
    const queue = new Queue(name, { connection });
    const { open, processor } = gate();
    const lockManager = new LockManager();
    const worker = new Worker(name, processor, {
      connection, lockManager, concurrency: 1000, lockDuration: 10_000, lockRenewTime: 1500, stalledInterval: 600_000,
    });
    // Every extendLocks-1 call is read off MONITOR, which names the script (its sha) and carries its
    // job ids: other scripts a worker may send meanwhile (a cancel look, a pickup) are not counted,
    // and no counting window has to line up with the ticks. The calls are counted from before the
    // first job: they must be the ticks, one call each with every job held.
    const calls: number[] = [];
    const ticks: LockRenewedEvent[] = [];
    const subscription = lockManager.renewed$.subscribe((tick) => ticks.push(tick));
    const stopMonitors: Array<() => void> = [];
    try {
      for (const server of await masters(admin)) {
        const { host = '127.0.0.1', port = 6379 } = server.options;
        stopMonitors.push(await monitorCommands(host, port, (args) => {
          // evalsha sha numkeys stalled base duration, then (jobId, token) pairs
          if (args[0]?.toLowerCase() === 'evalsha' && args[1] === SCRIPTS.extendLocks.sha) calls.push((args.length - 6) / 2);
        }));
      }
      const baseline = timeouts();
      await queue.addBulk(Array.from({ length: 1000 }, (_, i) => ({ name: 'j', data: { i } })));
      await eventually(() => lockManager.trackedCount(worker.id) === 1000, 20_000, '1,000 jobs tracked');
      expect(lockManager.activeTimers).toBe(1);
      expect(timeouts() - baseline).toBeLessThanOrEqual(2); // the heartbeat, not one timer per job

      const before = ticks.length;
      await eventually(() => ticks.length >= before + 3, 15_000, 'three ticks');
      subscription.unsubscribe();
      // The next tick is lockRenewTime (1.5 s) away: by the time MONITOR has shown the ticks' calls,
      // at most that next one can have joined them.
      const seen = ticks.length;
      await eventually(() => calls.length >= seen, 5_000, 'each tick seen by MONITOR');
      expect(calls.length).toBeLessThanOrEqual(seen + 1);
      expect(calls.slice(0, seen)).toEqual(ticks.map((tick) => tick.jobIds.length));
      for (const tick of ticks.slice(before)) expect(tick.jobIds).toHaveLength(1000);
    } finally {
      subscription.unsubscribe();
      for (const stop of stopMonitors) stop();
      open();
      await worker.close();
      await lockManager.close();
      await queue.close();
      admin.disconnect();
      await redis?.stop();
    }
  });

  it('chunks a large tick into several extendLocks-1 calls sent in one pipeline', async () => {
    const name = uniqueQueueName('chunks');
    const keys = new Keys(name);
    const scripts = new Scripts(client, keys, 1000);
    const lockManager = new LockManager({ renewalChunkSize: 250 });
    const locks = lockManager.register({ workerId: 'w1', queue: name, scripts, client, lockDuration: 5000, lockRenewTime: 200, heartbeatLateThreshold: 1000 });
    const pipelines: number[] = [];
    // The ticks go on the LockManager's renewal connection (a duplicate of `client`), so every
    // instance's pipeline() of client's kind (Redis, or Cluster in the cluster run) is watched.
    const spied = Object.getPrototypeOf(client) as { pipeline: typeof client.pipeline };
    const realPipeline = spied.pipeline;
    spied.pipeline = (function (this: typeof client, ...args: Parameters<typeof client.pipeline>) {
      const pipeline = realPipeline.apply(this, args);
      const exec = pipeline.exec.bind(pipeline);
      pipeline.exec = (async () => {
        const replies = await exec();
        pipelines.push(replies?.length ?? 0);
        return replies;
      }) as typeof pipeline.exec;
      return pipeline;
    }) as typeof client.pipeline;
    try {
      for (let i = 0; i < 1000; i++) await client.set(keys.lock(`job${i}`), `t${i}`, 'PX', 5000);
      const handles = Array.from({ length: 1000 }, (_, i) => locks.track(`job${i}`, `t${i}`, 1));
      const ticks = collect<LockRenewedEvent>(lockManager.renewed$);
      await eventually(() => ticks.length >= 1, 5000, 'a tick');
      expect(ticks[0].jobIds).toHaveLength(1000);
      expect(pipelines[0]).toBe(4); // four calls of 250, one round trip
      for (const handle of handles) handle.release('completed');
      expect(lockManager.activeTimers).toBe(0);
    } finally {
      spied.pipeline = realPipeline;
      await lockManager.close();
    }
  });

  it('reports a tick that fired late, with how late and the margin left on the locks', async () => {
    const name = uniqueQueueName('late');
    const queue = new Queue(name, { connection: testConnection() });
    const worker = new Worker(name, async () => {
      await sleep(400); // let one tick run on time
      const until = Date.now() + 900;
      while (Date.now() < until) { /* blocks the event loop, as a CPU-bound handler does */ }
      await sleep(400);
      return 'ok';
    }, { connection: testConnection(), lockDuration: 3000, lockRenewTime: 200, heartbeatLateThreshold: 100 });
    const late = collect<HeartbeatLateEvent>(worker.lockManager.heartbeatLate$);
    const completed = new Promise((resolve) => worker.once('completed', resolve));
    await queue.add('cpu', {});
    await completed;
    expect(late.length).toBeGreaterThanOrEqual(1);
    const [event] = late;
    expect(event).toEqual(expect.objectContaining({ type: 'heartbeatLate', queue: name, workerId: worker.id, lockDuration: 3000, jobCount: 1 }));
    expect(event.lateByMs).toBeGreaterThan(100);
    // The margin is what the oldest lock had left: less than a full TTL by at least the delay.
    expect(event.marginMs).toBeLessThanOrEqual(3000 - event.lateByMs);
    expect(event.marginMs).toBeGreaterThan(0);
    await worker.close();
    await queue.close();
  });

  it('close with running jobs: renewals go on until they finish, then no timer is left', async () => {
    const name = uniqueQueueName('close');
    const queue = new Queue(name, { connection: testConnection() });
    const lockManager = new LockManager();
    const worker = new Worker(name, async () => {
      await sleep(2500);
      return 'ok';
    }, { connection: testConnection(), lockManager, concurrency: 3, lockDuration: 1000 });
    let completed = 0;
    worker.on('completed', () => completed++);
    await queue.addBulk([1, 2, 3].map((i) => ({ name: 'j', data: { i } })));
    await eventually(() => lockManager.trackedCount(worker.id) === 3, 5000, 'three running jobs');
    const renewed = collect<LockRenewedEvent>(lockManager.renewed$);
    const lost = collect<LockRenewalFailedEvent>(lockManager.renewalFailed$);
    await worker.close();
    expect(completed).toBe(3);
    expect(lost).toEqual([]);
    expect(renewed.length).toBeGreaterThanOrEqual(2); // 2.5 s of renewals at 500 ms while closing
    expect(lockManager.activeTimers).toBe(0);
    expect(lockManager.workerIds).toEqual([]);
    expect((await queue.getJobCounts('completed')).completed).toBe(3);
    await lockManager.close();
    await queue.close();
  });

  it('narrows one LockManager serving two workers to one queue or one worker', async () => {
    const [nameA, nameB] = [uniqueQueueName('a'), uniqueQueueName('b')];
    const lockManager = new LockManager();
    const all = collect<LockEvent>(lockManager.events$);
    const onlyA = collect<LockEvent>(lockManager.events$.pipe(forQueue(nameA)));
    const queues = [new Queue(nameA, { connection: testConnection() }), new Queue(nameB, { connection: testConnection() })];
    const workers = [nameA, nameB].map((name) => new Worker(name, async () => 'ok', { connection: testConnection(), lockManager }));
    const onlyB = collect<LockEvent>(lockManager.events$.pipe(forWorker(workers[1].id)));
    await Promise.all(queues.map((queue) => queue.add('j', {})));
    await eventually(() => all.filter((e) => e.type === 'released').length === 2, 5000, 'both jobs released');
    expect(all.map((e) => e.type).sort()).toEqual(['acquired', 'acquired', 'released', 'released']);
    expect(onlyA.map((e) => [e.type, e.queue])).toEqual([['acquired', nameA], ['released', nameA]]);
    expect(onlyB.every((e) => e.workerId === workers[1].id && e.queue === nameB)).toBe(true);
    expect(onlyB).toHaveLength(2);
    await Promise.all(workers.map((worker) => worker.close()));
    await lockManager.close();
    await Promise.all(queues.map((queue) => queue.close()));
  });
});

describe('Periodic parts report what a run throws', () => {
  const client = newClient();
  afterAll(() => client.quit());

  it('Periodic hands a failed run to onError and keeps its cadence', async () => {
    const errors: Error[] = [];
    let runs = 0;
    const periodic = new Periodic(30, async () => {
      runs++;
      throw new Error(`run ${runs} failed`);
    }, (error) => errors.push(error));
    periodic.start();
    await eventually(() => errors.length >= 3, 2000, 'three failed runs reported');
    await periodic.stop();
    expect(errors.slice(0, 3).map((error) => error.message)).toEqual(['run 1 failed', 'run 2 failed', 'run 3 failed']);
  });

  it('a heartbeat tick that throws is reported on heartbeatError$, not skipped in silence', async () => {
    const name = uniqueQueueName('tick-throws');
    const keys = new Keys(name);
    const scripts = new Scripts(client, keys, 1000);
    scripts.extendLocksCall = () => { throw new Error('could not build the renewal'); };
    const lockManager = new LockManager();
    const errors = collect<HeartbeatErrorEvent>(lockManager.heartbeatError$);
    const locks = lockManager.register({ workerId: 'w1', queue: name, scripts, client, lockDuration: 5000, lockRenewTime: 100, heartbeatLateThreshold: 1000 });
    const handle = locks.track('1', 'token', 1);
    try {
      await eventually(() => errors.length >= 2, 3000, 'two failed ticks reported');
      expect(errors[0]).toEqual(expect.objectContaining({ type: 'heartbeatError', queue: name, workerId: 'w1', jobCount: 1 }));
      expect(errors[0].error.message).toBe('could not build the renewal');
    } finally {
      handle.release('completed');
      await lockManager.close();
    }
  });
});

describe('LockManager: timing options', () => {
  const name = uniqueQueueName('opts');
  const make = (opts: Record<string, unknown>) => () => new Worker(name, async () => 1, { autorun: false, connection: testConnection(), ...opts });

  it('refuses lockRenewTime at or over lockDuration, and zero or negative durations', () => {
    expect(make({ lockDuration: 1000, lockRenewTime: 1000 })).toThrow(EchoMQOptionError);
    expect(make({ lockDuration: 1000, lockRenewTime: 1500 })).toThrow(/lockRenewTime: is 1500 ms but must be below lockDuration \(1000 ms\)/);
    expect(make({ lockDuration: 0 })).toThrow(/lockDuration: must be a whole number above 0, got 0/);
    expect(make({ lockDuration: -5 })).toThrow(/lockDuration/);
    expect(make({ lockRenewTime: 0 })).toThrow(/lockRenewTime/);
    expect(make({ lockRenewTime: -1 })).toThrow(/lockRenewTime/);
    expect(make({ stalledInterval: 0 })).toThrow(/stalledInterval/);
    expect(make({ maxStalledCount: -1 })).toThrow(/maxStalledCount/);
    expect(make({ unsafeLockRenewTime: 0 })).toThrow(/unsafeLockRenewTime/);
  });

  it('refuses the same timing when a holder registers with a LockManager directly', () => {
    const lockManager = new LockManager();
    // Nothing is sent: a holder that registers is renewed only once it tracks a job.
    const scripts = {} as Scripts;
    const client = {} as Redis;
    const holder = { workerId: 'w', queue: name, scripts, client, lockDuration: 1000, lockRenewTime: 500, heartbeatLateThreshold: 100 };
    expect(() => lockManager.register({ ...holder, lockRenewTime: 1000 })).toThrow(/must be below lockDuration/);
    expect(() => lockManager.register({ ...holder, lockDuration: 0 })).toThrow(/lockDuration/);
    expect(() => lockManager.register({ ...holder, heartbeatLateThreshold: -1 })).toThrow(/heartbeatLateThreshold/);
    expect(() => new LockManager({ renewalChunkSize: 0 })).toThrow(/renewalChunkSize/);
    expect(lockManager.register({ ...holder, lockRenewTime: 4000, allowLapsingRenewTime: true }).holder.lockRenewTime).toBe(4000);
  });

  it('refuses a worker once closed: it would run jobs with no heartbeat', async () => {
    const lockManager = new LockManager();
    await lockManager.close();
    expect(() => new Worker(uniqueQueueName('closedlm'), async () => null, { connection: testConnection(), lockManager, autorun: false }))
      .toThrow(/LockManager is closed/);
  });

  it('accepts unsafeLockRenewTime over lockDuration: the documented escape hatch for demos and tests', async () => {
    const worker = make({ lockDuration: 1000, unsafeLockRenewTime: 4000 })();
    expect(worker.options.lockRenewTime).toBe(4000);
    expect(worker.options.lockRenewUnsafe).toBe(true);
    await worker.close();
  });
});

