import { EventEmitter } from 'node:events';
import { v4 as uuid } from 'uuid';
import { Keys } from '../protocol/keys.js';
import { assertQueueName } from '../protocol/names.js';
import type { RedisClient } from '../protocol/script.js';
import { Scripts } from '../protocol/scripts.js';
import { closeClient, connect, connectBlocking, dropClient } from './connection.js';
import { Fetcher } from './fetcher.js';
import { FinishBatcher } from './finish-batcher.js';
import type { Job, JobContext } from './job.js';
import { JobRunner, type ActiveJob, type ProcessorFunction } from './job-runner.js';
import { LockManager, type WorkerLocks } from './lock-manager.js';
import { resolveWorkerOptions, type ResolvedWorkerOptions, type WorkerOptions } from './options.js';
import { evictionPolicyWarning, redisVersionError } from './redis-health.js';
import { StalledSweeper } from './stalled-sweeper.js';

/** The events a Worker emits, with their arguments. */
export interface WorkerEvents {
  ready: [];
  active: [job: Job];
  completed: [job: Job, result: unknown];
  /** A job this worker runs stored its progress (job.updateProgress). */
  progress: [job: Job, progress: unknown];
  /** `willRetry` is true when the job has attempts left and went back to wait or delayed. */
  failed: [job: Job, error: Error, willRetry: boolean];
  /** The worker lost a job's lock: its result was not reported (another worker may run it). */
  lockLost: [job: Job, error: Error];
  stalled: [jobId: string, movedTo: 'wait' | 'failed'];
  /** The queue had no ready job left for this worker. */
  drained: [];
  error: [error: Error];
  /** Something about the setup risks jobs (e.g. a maxmemory-policy other than noeviction); checked at start. */
  warning: [message: string];
  closing: [];
  closed: [];
}

export interface WorkerConstructorOptions extends WorkerOptions {
  /** The LockManager that owns this worker's heartbeat; by default one of its own. */
  lockManager?: LockManager;
}

/** The lifecycle, one value: created → running → closing → closed. */
export type WorkerState = 'created' | 'running' | 'closing' | 'closed';

/**
 * Worker: takes jobs from a queue and runs them through a processor, `concurrency` at a time.
 * Its parts: a fetch loop (Fetcher), the heartbeat (its LockManager's timer), the stalled sweep
 * (StalledSweeper) and the job runner (JobRunner).
 */
export class Worker<Data = unknown, Result = unknown> extends EventEmitter<WorkerEvents> {
  readonly id = uuid();
  readonly keys: Keys;
  readonly options: ResolvedWorkerOptions;
  readonly lockManager: LockManager;
  private readonly client: RedisClient;
  private readonly ownsClient: boolean;
  private readonly blockingClient: RedisClient;
  private readonly ownsLockManager: boolean;
  private readonly scripts: Scripts;
  private readonly locks: WorkerLocks;
  private readonly fetcher: Fetcher;
  private readonly sweeper: StalledSweeper;
  private readonly runner: JobRunner;
  private readonly finisher: FinishBatcher;
  private state: WorkerState = 'created';
  private running = 0;
  private slotFreed?: () => void;
  private loop?: Promise<void>;
  private closing?: Promise<void>;
  private idleEmitted = true;
  private forced = false;

  constructor(readonly name: string, processor: ProcessorFunction<Data, Result>, opts: WorkerConstructorOptions = {}) {
    super();
    assertQueueName(name);
    if (typeof processor !== 'function') throw new TypeError('Worker: processor must be a function (job, { token, signal }) => result');
    this.options = resolveWorkerOptions(opts);
    this.keys = new Keys(name, this.options.prefix);
    const { client, owned } = connect(opts.connection);
    this.client = client;
    this.ownsClient = owned;
    this.blockingClient = connectBlocking(opts.connection);
    this.scripts = new Scripts(client, this.keys, this.options.maxEvents, this.options.limiter);
    this.lockManager = opts.lockManager ?? new LockManager();
    this.ownsLockManager = opts.lockManager === undefined;
    const { lockDuration, lockRenewTime, heartbeatLateThreshold, lockRenewUnsafe } = this.options;
    this.locks = this.lockManager.register({
      workerId: this.id, queue: name, scripts: this.scripts, lockDuration, lockRenewTime, heartbeatLateThreshold,
      allowLapsingRenewTime: lockRenewUnsafe,
    });
    this.fetcher = new Fetcher(this.scripts, this.blockingClient, lockDuration, this.options.drainDelay);
    this.sweeper = new StalledSweeper(this.scripts, this.options, (result) => {
      this.lockManager.reportStalled(name, this.id, result);
      for (const { jobId } of result.movedToWait) this.emit('stalled', jobId, 'wait');
      for (const { jobId } of result.movedToFailed) this.emit('stalled', jobId, 'failed');
    }, (error) => this.reportError(error));
    const context: JobContext = {
      queueName: name, keys: this.keys, scripts: this.scripts, client,
      onProgress: (job, progress) => this.emitSafely('progress', job, progress),
    };
    this.finisher = new FinishBatcher(this.scripts, lockDuration, this.options.concurrency, () => this.running);
    this.runner = new JobRunner(processor as ProcessorFunction, this.scripts, context, this.locks, lockDuration, this.finisher, {
      active: (job) => this.emitSafely('active', job),
      completed: (job, result) => this.emitSafely('completed', job, result),
      failed: (job, error, willRetry) => this.emitSafely('failed', job, error, willRetry),
      lockLost: (job, error) => this.emitSafely('lockLost', job, error),
      error: (error) => this.reportError(error),
    });
    if (this.options.autorun) void this.run();
  }

  get status(): WorkerState {
    return this.state;
  }

  /** How many jobs it is running now. */
  get runningCount(): number {
    return this.running;
  }

  /** Starts fetching (when autorun is false); resolves when the worker has closed. */
  run(): Promise<void> {
    if (this.state === 'created') {
      this.state = 'running';
      this.sweeper.start();
      this.loop = this.fetchLoop();
      void this.warnAboutRedis();
      this.emit('ready');
    }
    return this.closed();
  }

  /** Resolves when both connections are ready. */
  async waitUntilReady(): Promise<void> {
    await Promise.all([this.client.ping(), this.blockingClient.ping()]);
  }

  /**
   * Stops fetching, waits for the running jobs (their locks still renewed), then stops the
   * heartbeat and the sweep and closes the connections it owns. `force` does not wait: running
   * jobs' signals are aborted and their locks left to lapse, so another worker retries them.
   */
  close(force = false): Promise<void> {
    if (force && !this.forced && this.closing) {
      // A close() already waits for the running jobs: close(true) now cuts that wait short.
      this.forced = true;
      this.locks.abortAll(new Error(`worker ${this.id} closed without waiting for its jobs`));
      this.slotFreed?.();
    }
    if (force) this.forced = true;
    this.closing ??= this.shutdown(force);
    return this.closing;
  }

  private async shutdown(force: boolean): Promise<void> {
    const wasRunning = this.state === 'running';
    this.state = 'closing';
    this.emit('closing');
    this.finisher.flush(); // finishes of this turn go now, not after the connection closed
    this.fetcher.interrupt();
    if (force) this.locks.abortAll(new Error(`worker ${this.id} closed without waiting for its jobs`));
    this.slotFreed?.();
    if (wasRunning) await this.loop;
    while (!this.forced && this.running > 0) await new Promise<void>((resolve) => (this.slotFreed = resolve));
    await this.sweeper.stop();
    await this.locks.close();
    if (this.ownsLockManager) await this.lockManager.close();
    if (this.ownsClient) await closeClient(this.client);
    dropClient(this.blockingClient);
    this.state = 'closed';
    this.emit('closed');
  }

  private async closed(): Promise<void> {
    await this.loop;
    if (this.closing) await this.closing;
  }

  /** Fetches while there is a free slot; blocks on the marker when the queue has nothing ready. */
  private async fetchLoop(): Promise<void> {
    const tooOld = await redisVersionError(this.client);
    if (tooOld) {
      this.reportError(tooOld);
      void this.close();
      return;
    }
    let failures = 0;
    while (this.state === 'running') {
      if (this.running >= this.options.concurrency) {
        await new Promise<void>((resolve) => (this.slotFreed = resolve));
        continue;
      }
      try {
        const token = uuid();
        const sentAt = Date.now();
        const pickup = await this.fetcher.fetch(token);
        failures = 0;
        if (pickup.job) {
          this.idleEmitted = false;
          this.startChain({ id: pickup.job.id, fields: pickup.job.fields, token, acquiredAt: sentAt });
          continue;
        }
        if (!this.idleEmitted && this.running === 0) {
          this.idleEmitted = true;
          this.emit('drained');
        }
        if (this.state !== 'running') break;
        await this.fetcher.waitForWork(pickup);
      } catch (error) {
        if (this.state !== 'running') break;
        this.reportError(error as Error);
        await new Promise((resolve) => setTimeout(resolve, Math.min(5000, 100 * 2 ** failures++)));
      }
    }
  }

  /** Runs a job and then each job fetch-next hands over, in one slot. */
  private startChain(first: ActiveJob): void {
    this.running++;
    void (async () => {
      let current: ActiveJob | undefined = first;
      try {
        while (current && !this.forced) current = await this.runner.run(current, () => this.state === 'running');
      } catch (error) {
        this.reportError(error as Error);
      } finally {
        this.running--;
        const wake = this.slotFreed;
        this.slotFreed = undefined;
        wake?.();
      }
    })();
  }

  /** One CONFIG GET at start: an evicting Redis can drop jobs silently, so say so loudly. */
  private async warnAboutRedis(): Promise<void> {
    const warning = await evictionPolicyWarning(this.client);
    if (!warning) return;
    if (this.listenerCount('warning') > 0) this.emit('warning', warning);
    else console.warn(`EchoMQ worker for queue ${this.name}: ${warning}`);
  }

  /**
   * A listener that throws must not cut a job's run short: thrown from 'active' it left the job
   * tracked (its lock renewed forever, the job active forever); from 'completed' it lost the job
   * fetch-next had just taken. The listener's error is reported instead.
   */
  private emitSafely<E extends 'active' | 'progress' | 'completed' | 'failed' | 'lockLost'>(event: E, ...args: WorkerEvents[E]): void {
    try {
      (this.emit as (event: E, ...args: WorkerEvents[E]) => boolean)(event, ...args);
    } catch (error) {
      this.reportError(error instanceof Error ? error : new Error(String(error)));
    }
  }

  private reportError(error: Error): void {
    if (this.listenerCount('error') > 0) this.emit('error', error);
    else console.error(`EchoMQ worker for queue ${this.name}:`, error);
  }
}
