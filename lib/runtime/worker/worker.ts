import { EventEmitter } from 'node:events';
import { asError, reportOnErrorChannel } from '../core/error-channel.js';
import { randomUUID as uuid } from 'node:crypto';
import type { Keys } from '../../protocol/keys.js';
import { assertQueueName } from '../../protocol/names.js';
import { assertPartitionedName } from '../../protocol/partitions.js';
import { SingleLaneSource, type JobSource } from './job-source.js';
import type { ProcessorFunction } from '../queue/processor.js';
import { LockManager } from '../locks/lock-manager.js';
import { refuseSandboxOptions, resolveWorkerOptions, type ResolvedWorkerOptions, type WorkerConstructorOptions } from './worker-options.js';
import { TRANSITIONS, type PlainEvent, type WorkerEvents, type WorkerState } from './worker-events.js';
import { PartitionFetcher } from './partition-fetcher.js';
import { evictionPolicyWarning } from '../core/redis-health.js';
import { RunSlots } from './run-slots.js';
import { Sleeper } from '../core/sleeper.js';
import { WorkerLane } from './worker-lane.js';
import type { Job } from '../job/job.js';
import { takeByHand } from './manual-pickup.js';
import { EchoMQOptionError } from '../../protocol/errors.js';
import { describe } from '../../protocol/names.js';
import { laneOwnerOf } from './lane-owner.js';
import { WorkerLimits } from './worker-limits.js';
import { WorkerPresence } from './worker-presence.js';
import { MetricsRecorder } from './metrics-recorder.js';
import { RateLimitError } from '../core/rate-limit-error.js';
import { setManualRateLimit } from '../core/manual-rate-limit.js';
import { assertRateLimitMs } from '../core/option-numbers.js';
import { assertCancelReason } from '../core/job-cancelled-error.js';
import { SandboxPool } from '../sandbox/sandbox-pool.js';
import { CancelWatch } from './cancel-watch.js';
import { underRootContext } from '../telemetry/guarded-context.js';
import { FetchLoop } from './fetch-loop.js';
import { WorkerConnections } from './worker-connections.js';
import { preflight } from './worker-preflight.js';
import { WorkerShutdown } from './worker-shutdown.js';

/**
 * Worker: takes jobs from a queue and runs them through a processor, `concurrency` at a time.
 * Its parts: a fetch loop (FetchLoop) over a JobSource, and a WorkerLane per hash tag of the queue
 * (one for a plain queue, one per partition of a partitioned one), each with its Fetcher, heartbeat
 * (a WorkerLocks of its LockManager), stalled sweep (StalledSweeper) and job runner (JobRunner); the
 * limits its pickups keep (WorkerLimits) and its registry entry (WorkerPresence), both carried by
 * its heartbeat; its connections (WorkerConnections) and its close (WorkerShutdown). This class
 * builds them and holds the lifecycle (TRANSITIONS) and the public face.
 */
export class Worker<Data = unknown, Result = unknown> extends EventEmitter<WorkerEvents> {
  readonly id = uuid();
  readonly options: ResolvedWorkerOptions;
  readonly lockManager: LockManager;
  private readonly connections: WorkerConnections;
  private readonly ownsLockManager: boolean;
  private readonly lanes: WorkerLane[] = [];
  private readonly source: JobSource;
  /** The queue's limits as the heartbeat last read them, and the worker's own (docs/limits.md). */
  private readonly limits: WorkerLimits;
  /** Its entry in the worker registry (queue.getWorkers()) and the read of the limits, in each heartbeat tick. */
  private readonly presence: WorkerPresence;
  /** With `metrics`: its per-minute counts of finished jobs (queue.getMetrics). */
  private readonly metrics?: MetricsRecorder;
  /** The source of a partitioned queue's worker (the same object as `source`). */
  private readonly partitionFetcher?: PartitionFetcher;
  private state: WorkerState = 'created';
  /**
   * Every wait of the worker sleeps here (a free slot, resume, running jobs ending, the error
   * backoff), each in a loop over its condition; every change that may end a wait wakes it:
   * a transition, a slot freed, close(true).
   */
  private readonly sleeper = new Sleeper();
  /** With prefetch: where a job held ahead waits for a handler to end (docs/prefetch.md). */
  private readonly slots?: RunSlots;
  private readonly loop: FetchLoop;
  private loopDone?: Promise<void>;
  private readonly shutdown: WorkerShutdown;
  private closing?: Promise<void>;
  /** Resolved by the first close(): run() resolves with the close, not with the fetch loop. */
  private closeRequested!: () => void;
  private readonly closeBegan = new Promise<void>((resolve) => (this.closeRequested = resolve));
  /** The threads or child processes that run a processor file (docs/sandbox.md); none for a function. */
  private readonly sandbox?: SandboxPool;

  /** No processor: jobs are taken by hand with getNextJob(token), as BullMQ's manual processing. */
  private readonly manual: boolean;

  /**
   * `processor`: a function run in process, or the absolute path or file: URL of a module whose
   * default export is the handler, run in worker threads (`useWorkerThreads`) or child processes.
   * None (undefined or null): the worker never runs a fetch loop; jobs are taken with
   * getNextJob(token) and released with the job's moveToCompleted, moveToFailed or moveToWait.
   */
  constructor(readonly name: string, processor?: ProcessorFunction<Data, Result> | string | URL | null, opts: WorkerConstructorOptions = {}) {
    super();
    assertQueueName(name);
    this.manual = processor === undefined || processor === null;
    if (typeof processor === 'function' || this.manual) refuseSandboxOptions(opts);
    this.options = resolveWorkerOptions(opts);
    const { concurrency, prefetch, partitions, telemetry, lockRenewTime } = this.options;
    const holds = concurrency + prefetch;
    if (prefetch > 0) this.slots = new RunSlots(concurrency);
    if (!this.manual && typeof processor !== 'function') {
      // Under the empty context (with a telemetry that has one): the pool starts its sandboxes in
      // the context it was made in, which their threads or processes then keep for their lives.
      this.sandbox = underRootContext(telemetry, () => SandboxPool.open(processor as string | URL, opts, {
        concurrency,
        report: (error) => this.reportError(error),
        rateLimit: (ms) => this.rateLimit(ms),
      }), (error) => this.reportError(error));
    }
    assertPartitionedName(name, partitions);
    const connections = (this.connections = new WorkerConnections(opts.connection, partitions));
    const { client } = connections;
    this.lockManager = opts.lockManager ?? new LockManager();
    this.ownsLockManager = opts.lockManager === undefined;
    this.limits = new WorkerLimits(this.options, () => this.limitsChanged());
    const owner = laneOwnerOf({
      workerId: this.id, queueName: name, options: this.options, connections, limits: this.limits, lockManager: this.lockManager,
      processor: typeof processor === 'function' ? processor as ProcessorFunction : noProcessor(name), sandbox: this.sandbox, holds, slots: this.slots,
      metrics: () => this.metrics, partitionFetcher: () => this.partitionFetcher, running: () => this.loop.running,
      emit: (event, ...args) => this.emitSafely(event, ...args), reportError: (error) => this.reportError(error),
    });
    try {
      for (let i = 0; i < partitions; i++) this.lanes.push(new WorkerLane(owner, i, this.lanes[0]));
    } catch (error) {
      // Refused (a closed LockManager): nothing opened above may outlive the throw.
      void Promise.all(this.lanes.map((lane) => lane.locks.close()));
      for (const lane of this.lanes) lane.detach();
      connections.drop();
      throw error;
    }
    if (partitions === 1) {
      this.source = new SingleLaneSource(this.lanes[0]);
    } else {
      const fetcher = new PartitionFetcher(this.lanes, this.options.drainDelay * 1000, this.options.partitionConcurrency, holds);
      this.partitionFetcher = fetcher;
      this.source = fetcher;
      connections.listen(this.lanes.map((lane) => lane.keys.wake), (i) => fetcher.wake(i), () => fetcher.wakeAll());
    }
    if (this.options.metrics) {
      this.metrics = new MetricsRecorder(client, this.lanes[0].keys, this.options.metrics.maxDataPoints, (error) => this.reportError(error));
    }
    // queue.cancelJob from any process: the heartbeat's read of the `cancels` counter tells it.
    const cancels = new CancelWatch(this.lanes.map((lane) => lane.locks), (error) => this.reportError(error));
    this.presence = new WorkerPresence(client, this.lanes[0].keys, { id: this.id, name: this.options.name, concurrency, lockRenewTime }, () => this.loop.running, this.limits,
      (count) => cancels.read(count));
    const reportError = (error: Error) => this.reportError(error);
    const loop: FetchLoop = (this.loop = new FetchLoop({
      source: this.source, limits: this.limits, holds, sleeper: this.sleeper, state: () => this.state, forced: () => this.shutdown.forced,
      drained: () => this.emitSafely('drained'), reportError,
      preflight: (): Promise<boolean> => preflight({
        queueName: name, client, lanes: this.lanes, waker: connections.waker, presence: this.presence, loop, reportError,
        refuse: (error) => {
          reportError(error);
          void this.close();
        },
      }),
    }));
    this.shutdown = new WorkerShutdown({
      workerId: this.id, queueName: name, closeTimeout: this.options.closeTimeout, lanes: this.lanes, source: this.source, loop, slots: this.slots,
      sandbox: this.sandbox, sleeper: this.sleeper, lockManager: this.lockManager, ownsLockManager: this.ownsLockManager, presence: this.presence,
      metrics: this.metrics, connections, reportError,
    });
    if (this.options.autorun && !this.manual) void this.run();
  }

  /** The queue's keys. A partitioned queue has a set per partition: see `partitionKeys`. */
  get keys(): Keys {
    if (this.lanes.length > 1) throw new Error(`queue ${this.name} has ${this.lanes.length} partitions, each with its own keys: use worker.partitionKeys`);
    return this.lanes[0].keys;
  }

  /** The keys of each partition, in partition order (one entry for a plain queue). */
  get partitionKeys(): readonly Keys[] {
    return this.lanes.map((lane) => lane.keys);
  }

  get status(): WorkerState {
    return this.state;
  }

  /** How many jobs it is running now. */
  get runningCount(): number {
    return this.loop.running;
  }

  /** True from run() until close() begins, paused or not. */
  isRunning(): boolean {
    return this.state === 'running' || this.state === 'paused';
  }

  /** True while pause() holds this worker. */
  isPaused(): boolean {
    return this.state === 'paused';
  }

  /** Starts fetching (when autorun is false); resolves when the worker has closed. */
  run(): Promise<void> {
    if (this.manual) return Promise.reject(new Error(`worker for queue ${this.name} has no processor: take its jobs with getNextJob(token)`));
    if (this.state === 'created') {
      this.moveTo('running');
      // Under the empty context (with a telemetry that has one): what the loop and the sweeps start
      // is no child of whatever span was active where run() was called, and an attempt of a job
      // that carries no trace context starts a trace of its own.
      underRootContext(this.options.telemetry, () => {
        for (const lane of this.lanes) lane.sweeper.start();
        this.loopDone = this.loop.run();
        void this.announceReady();
        void this.warnAboutRedis();
      }, (error) => this.reportError(error));
    }
    return this.closed();
  }

  /**
   * A worker without a processor: takes the next job under `token` (BullMQ's manual processing), its
   * lock held for lockDuration and not renewed (job.extendLock renews it); release it with
   * job.moveToCompleted, moveToFailed or moveToWait and the same token. With `block` (the default)
   * it waits up to drainDelay for one when none is ready. Undefined when there is none, or once
   * the worker closes. A job a worker would not run (cancelled, failed by a child, a skipped
   * scheduler slot) ends as it would there and is not handed out (manual-pickup.ts).
   */
  async getNextJob(token: string, opts: { block?: boolean } = {}): Promise<Job<Data, Result> | undefined> {
    if (typeof token !== 'string' || token.length === 0) throw new EchoMQOptionError('token', `must be a non-empty string, got ${describe(token)}`);
    if (this.state === 'closing' || this.state === 'closed') return undefined;
    return takeByHand<Data, Result>(this.source, token, opts.block !== false);
  }


  /** Starts the stalled sweep of a worker without a processor (BullMQ's name); a running worker has it already. */
  startStalledCheckTimer(): void {
    if (this.state !== 'created') return;
    for (const lane of this.lanes) lane.sweeper.start();
  }

  /** Resolves when its connections are ready: the shared one, and the marker's (or, partitioned, the wake channels' subscriptions). */
  async waitUntilReady(): Promise<void> {
    await this.connections.ready();
  }

  /**
   * This worker only (the queue goes on for the others; Queue.pause() pauses the queue): it takes
   * no new job, and keeps running and renewing the ones it has. Resolves when those have ended,
   * or at once with `doNotWaitActive`. Does nothing unless the worker is running (not before run(),
   * not while closing).
   */
  async pause(doNotWaitActive = false): Promise<void> {
    if (this.state === 'running') {
      this.moveTo('paused');
      this.source.stopWaiting();
      this.emitSafely('paused');
    }
    if (doNotWaitActive) return;
    while (this.state === 'paused' && !this.shutdown.forced && (this.loop.running > 0 || this.loop.fetching)) await this.sleeper.sleep(Infinity);
  }

  /**
   * A manual rate limit (BullMQ's worker.rateLimit), for when the work a handler calls answers "too
   * many requests": no worker of the queue takes a job for `expireTimeMs`. This worker stops at
   * once; a worker with a rate limit (its `limiter`, or the queue's setGlobalRateLimit) at its next
   * pickup; any other at its next heartbeat tick (within lockRenewTime). Throw RateLimitError from
   * the handler afterwards to give its job back without using an attempt. docs/limits.md.
   */
  async rateLimit(expireTimeMs: number): Promise<void> {
    assertRateLimitMs(expireTimeMs);
    this.limits.limitFor(expireTimeMs);
    await setManualRateLimit(this.connections.client, this.partitionKeys, expireTimeMs);
  }

  /** BullMQ's `throw Worker.RateLimitError()`: the same as `throw new RateLimitError()`. */
  static RateLimitError(): RateLimitError {
    return new RateLimitError();
  }

  /**
   * Cancels a job this worker runs (BullMQ's name): its signal aborts with a JobCancelledError and
   * the job fails at once with that reason, not retried (the handler is not waited for; what it
   * returns later is refused). True if this worker was running it; false otherwise (another
   * worker's job: use queue.cancelJob, which reaches every process).
   */
  cancelJob(jobId: string, reason?: string): boolean {
    assertCancelReason(reason);
    return this.lanes.some((lane) => lane.locks.cancel(jobId, reason, 'worker'));
  }

  /** Cancels every job this worker runs now, as cancelJob does each (BullMQ's name). */
  cancelAllJobs(reason?: string): void {
    assertCancelReason(reason);
    for (const lane of this.lanes) for (const jobId of lane.locks.jobIds) lane.locks.cancel(jobId, reason, 'worker');
  }

  /** Ends a pause(): the worker takes jobs again at once. Does nothing unless it is paused. */
  resume(): void {
    if (this.state !== 'paused') return;
    this.moveTo('running');
    this.emitSafely('resumed');
  }

  /**
   * Stops fetching, waits for the running jobs (their locks still renewed), then stops the
   * heartbeat and the sweep and closes the connections it owns. `force` does not wait: running
   * jobs' signals are aborted and their locks left to lapse, so another worker retries them.
   * Either way it takes at most `closeTimeout` ms: past it the worker gives up what is left as
   * close(true) does, and reports a CloseTimeoutError on 'error'.
   */
  close(force = false): Promise<void> {
    // A close() already waits for the running jobs: close(true) now cuts that wait short.
    if (force) this.shutdown.force(this.closing !== undefined);
    this.closing ??= this.closeNow();
    this.closeRequested();
    return this.closing;
  }

  private async closeNow(): Promise<void> {
    this.moveTo('closing');
    this.emitSafely('closing');
    await this.shutdown.run(this.loopDone);
    this.moveTo('closed');
    this.emitSafely('closed');
  }

  /**
   * What run() answers. Not the fetch loop: past closeTimeout its last call may never settle (Redis
   * is away), and the close has then given it up.
   */
  private async closed(): Promise<void> {
    await this.closeBegan;
    await this.closing;
  }

  /** Moves the lifecycle on (only along TRANSITIONS) and wakes every wait, which rechecks its condition. */
  private moveTo(next: WorkerState): void {
    if (!TRANSITIONS[this.state].includes(next)) throw new Error(`worker ${this.id}: no transition from ${this.state} to ${next}`);
    this.state = next;
    this.sleeper.wake();
  }

  /** 'ready' once both connections answer; never if the worker closes first. */
  private async announceReady(): Promise<void> {
    try {
      await this.waitUntilReady();
    } catch {
      return; // the worker closed (its connections dropped) before Redis answered
    }
    if (this.isRunning()) this.emitSafely('ready');
  }

  /** A limit changed (read by a tick): waits begun under the old value end, and the fetch loop looks again. */
  private limitsChanged(): void {
    this.partitionFetcher?.wakeAll();
    this.source.stopWaiting();
    this.sleeper.wake();
  }

  /** One CONFIG GET at start: an evicting Redis can drop jobs silently, so say so loudly. */
  private async warnAboutRedis(): Promise<void> {
    const warning = await evictionPolicyWarning(this.connections.client);
    if (!warning) return;
    if (this.listenerCount('warning') > 0) this.emitSafely('warning', warning);
    else console.warn(`EchoMQ worker for queue ${this.name}: ${warning}`);
  }

  /**
   * A listener that throws must not cut a job's run short: thrown from 'active' it left the job
   * tracked (its lock renewed forever, the job active forever); from 'completed' it lost the job
   * fetch-next had just taken. The listener's error is reported instead.
   */
  private emitSafely<E extends PlainEvent>(event: E, ...args: WorkerEvents[E]): void {
    try {
      (this.emit as (event: E, ...args: WorkerEvents[E]) => boolean)(event, ...args);
    } catch (error) {
      this.reportError(asError(error));
    }
  }

  private reportError(error: Error): void {
    reportOnErrorChannel(this as EventEmitter, `worker for queue ${this.name}`, error);
  }
}

/** A worker's sandboxes, when its processor is a file (internal: for tests and tools). */
export function sandboxPoolOf(worker: Worker): SandboxPool | undefined {
  return worker['sandbox'];
}

/** The lanes' processor of a worker without one: never called, as its fetch loop never runs. */
function noProcessor(queueName: string): ProcessorFunction {
  return () => Promise.reject(new Error(`worker for queue ${queueName} has no processor`));
}
