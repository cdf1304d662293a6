import { EventEmitter } from 'node:events';
import { asError, reportOnErrorChannel } from '../core/error-channel.js';
import { randomUUID as uuid } from 'node:crypto';
import type { Keys } from '../../protocol/keys.js';
import { assertQueueName } from '../../protocol/names.js';
import { assertPartitionedName } from '../../protocol/partitions.js';
import type { RedisClient } from '../../protocol/script.js';
import { CloseTimeoutError } from '../core/close-timeout-error.js';
import { closeClient, connect, connectBlocking, dropClient } from '../core/connection.js';
import { SingleLaneSource, type JobSource } from './job-source.js';
import type { ActiveJob } from './job-runner.js';
import type { ProcessorFunction } from '../queue/processor.js';
import { LockManager } from '../locks/lock-manager.js';
import { refuseSandboxOptions, resolveWorkerOptions, type ResolvedWorkerOptions, type WorkerConstructorOptions } from './worker-options.js';
import { TRANSITIONS, type PlainEvent, type WorkerEvents, type WorkerState } from './worker-events.js';
import { partitionCountError } from '../queue/partition-count.js';
import { PartitionFetcher } from './partition-fetcher.js';
import { PartitionWaker } from './partition-waker.js';
import { evictionPolicyWarning, PARTITIONS_NEED, redisVersionError } from '../core/redis-health.js';
import { RunSlots } from './run-slots.js';
import { Sleeper } from '../core/sleeper.js';
import { redisSilentFor } from './redis-silence.js';
import { WorkerLane, type LaneOwner } from './worker-lane.js';
import { WorkerLimits } from './worker-limits.js';
import { WorkerPresence } from './worker-presence.js';
import { MetricsRecorder } from './metrics-recorder.js';
import { RateLimitError } from '../core/rate-limit-error.js';
import { setManualRateLimit } from './manual-rate-limit.js';
import { assertRateLimitMs } from '../core/option-numbers.js';
import { assertCancelReason } from '../core/job-cancelled-error.js';
import { SandboxPool } from '../sandbox/sandbox-pool.js';
import { CancelWatch } from './cancel-watch.js';
import { underRootContext } from '../telemetry/guarded-context.js';
import { StallSpans } from './stall-spans.js';


/**
 * Worker: takes jobs from a queue and runs them through a processor, `concurrency` at a time.
 * Its parts: a fetch loop over a JobSource, and a WorkerLane per hash tag of the queue (one for a
 * plain queue, one per partition of a partitioned one), each with its Fetcher, heartbeat (a
 * WorkerLocks of its LockManager), stalled sweep (StalledSweeper) and job runner (JobRunner); the
 * limits its pickups keep (WorkerLimits) and its registry entry (WorkerPresence), both carried by
 * its heartbeat.
 */
export class Worker<Data = unknown, Result = unknown> extends EventEmitter<WorkerEvents> {
  readonly id = uuid();
  readonly options: ResolvedWorkerOptions;
  readonly lockManager: LockManager;
  private readonly client: RedisClient;
  private readonly ownsClient: boolean;
  /** A plain queue's marker connection (BZPOPMIN); a partitioned queue's worker has a waker instead. */
  private readonly blockingClient?: RedisClient;
  private readonly waker?: PartitionWaker;
  private readonly ownsLockManager: boolean;
  private readonly lanes: WorkerLane[] = [];
  private readonly source: JobSource;
  /** The queue's limits as the heartbeat last read them, and the worker's own (docs/limits.md). */
  private readonly limits: WorkerLimits;
  /** Its entry in the worker registry (queue.getWorkers()) and the read of the limits, in each heartbeat tick. */
  private readonly presence: WorkerPresence;
  /** With `metrics`: its per-minute counts of finished jobs (queue.getMetrics). */
  private metrics?: MetricsRecorder;
  /** The source of a partitioned queue's worker (the same object as `source`). */
  private readonly partitionFetcher?: PartitionFetcher;
  private state: WorkerState = 'created';
  /**
   * Every wait of the worker sleeps here (a free slot, resume, running jobs ending, the error
   * backoff), each in a loop over its condition; every change that may end a wait wakes it:
   * a transition, a slot freed, close(true).
   */
  private readonly sleeper = new Sleeper();
  /** Jobs this worker holds at most: concurrency, plus prefetch. */
  private readonly holds: number;
  /** With prefetch: where a job held ahead waits for a handler to end (docs/prefetch.md). */
  private readonly slots?: RunSlots;
  private running = 0;
  /** A moveToActive is in flight: a job it takes will run, so pause() waits for it too. */
  private fetching = false;
  private loop?: Promise<void>;
  private closing?: Promise<void>;
  /** Resolved by the first close(): run() resolves with the close, not with the fetch loop. */
  private closeRequested!: () => void;
  private readonly closeBegan = new Promise<void>((resolve) => (this.closeRequested = resolve));
  /** What close() waits for now, named by a CloseTimeoutError if the time runs out. */
  private closeStep = 'nothing';
  private idleEmitted = true;
  private forced = false;
  /** The threads or child processes that run a processor file (docs/sandbox.md); none for a function. */
  private readonly sandbox?: SandboxPool;

  /**
   * `processor`: a function run in process, or the absolute path or file: URL of a module whose
   * default export is the handler, run in worker threads (`useWorkerThreads`) or child processes.
   */
  constructor(readonly name: string, processor: ProcessorFunction<Data, Result> | string | URL, opts: WorkerConstructorOptions = {}) {
    super();
    assertQueueName(name);
    if (typeof processor === 'function') refuseSandboxOptions(opts);
    this.options = resolveWorkerOptions(opts);
    const { concurrency, prefetch } = this.options;
    this.holds = concurrency + prefetch;
    if (prefetch > 0) this.slots = new RunSlots(concurrency);
    if (typeof processor !== 'function') {
      // Under the empty context (with a telemetry that has one): the pool starts its sandboxes in
      // the context it was made in, which their threads or processes then keep for their lives.
      this.sandbox = underRootContext(this.options.telemetry, () => SandboxPool.open(processor, opts, {
        concurrency: this.options.concurrency,
        report: (error) => this.reportError(error),
        rateLimit: (ms) => this.rateLimit(ms),
      }), (error) => this.reportError(error));
    }
    const { partitions } = this.options;
    assertPartitionedName(name, partitions);
    const { client, owned } = connect(opts.connection);
    this.client = client;
    this.ownsClient = owned;
    if (partitions === 1) this.blockingClient = connectBlocking(opts.connection);
    const { telemetry } = this.options;
    const stallSpans = telemetry && new StallSpans(telemetry, client, name, (error) => this.reportError(error));
    this.lockManager = opts.lockManager ?? new LockManager();
    this.ownsLockManager = opts.lockManager === undefined;
    this.limits = new WorkerLimits(this.options, () => this.limitsChanged());
    const owner: LaneOwner = {
      workerId: this.id, queueName: name, partitions, client, blockingClient: this.blockingClient, options: this.options,
      limits: this.limits, lockManager: this.lockManager, processor: this.sandbox?.processor ?? processor as ProcessorFunction, sandboxed: this.sandbox !== undefined,
      runnerEvents: {
        active: (job) => this.emitSafely('active', job),
        completed: (job, result) => {
          this.metrics?.count('completed');
          this.emitSafely('completed', job, result);
        },
        failed: (job, error, willRetry) => {
          if (!willRetry) this.metrics?.count('failed');
          this.emitSafely('failed', job, error, willRetry);
        },
        lockLost: (job, error) => this.emitSafely('lockLost', job, error),
        error: (error) => this.reportError(error),
      },
      onProgress: (job, progress) => this.emitSafely('progress', job, progress),
      onSwept: (lane, result) => {
        this.lockManager.reportStalled(lane.keys.queueName, this.id, result);
        // Back in wait: work for any worker. To failed: room in a partition full under partitionConcurrency.
        if (result.movedToWait.length > 0 || result.movedToFailed.length > 0) this.partitionFetcher?.announce(lane);
        // To failed under a queue-wide concurrency: a slot freed that no marker announced (the sweep sets one for wait only).
        if (result.movedToFailed.length > 0 && Number.isFinite(this.limits.globalConcurrency)) void client.zadd(lane.keys.marker, 0, '0').catch(() => undefined);
        for (const { jobId } of result.movedToWait) this.emitSafely('stalled', jobId, 'wait');
        for (const { jobId } of result.movedToFailed) this.emitSafely('stalled', jobId, 'failed');
        if (stallSpans) void stallSpans.record(lane.keys, result, partitions === 1 ? undefined : lane.index);
      },
      onSweepError: (error) => this.reportError(error),
      running: () => this.running,
      holds: this.holds,
      slots: this.slots,
    };
    try {
      for (let i = 0; i < partitions; i++) this.lanes.push(new WorkerLane(owner, i, this.lanes[0]));
    } catch (error) {
      // Refused (a closed LockManager): nothing opened above may outlive the throw.
      void Promise.all(this.lanes.map((lane) => lane.locks.close()));
      for (const lane of this.lanes) lane.detach();
      if (owned) dropClient(client);
      if (this.blockingClient) dropClient(this.blockingClient);
      throw error;
    }
    if (partitions === 1) {
      this.source = new SingleLaneSource(this.lanes[0]);
    } else {
      const fetcher = new PartitionFetcher(this.lanes, this.options.drainDelay * 1000, this.options.partitionConcurrency, this.holds);
      this.partitionFetcher = fetcher;
      this.source = fetcher;
      this.waker = new PartitionWaker(opts.connection, this.lanes.map((lane) => lane.keys.wake), (i) => fetcher.wake(i), () => fetcher.wakeAll());
    }
    if (this.options.metrics) {
      this.metrics = new MetricsRecorder(client, this.lanes[0].keys, this.options.metrics.maxDataPoints, (error) => this.reportError(error));
    }
    const { lockRenewTime } = this.options;
    // queue.cancelJob from any process: the heartbeat's read of the `cancels` counter tells it.
    const cancels = new CancelWatch(this.lanes.map((lane) => lane.locks), (error) => this.reportError(error));
    this.presence = new WorkerPresence(client, this.lanes[0].keys, { id: this.id, name: this.options.name, concurrency, lockRenewTime }, () => this.running, this.limits,
      (count) => cancels.read(count));
    if (this.options.autorun) void this.run();
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
    return this.running;
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
    if (this.state === 'created') {
      this.moveTo('running');
      // Under the empty context (with a telemetry that has one): what the loop and the sweeps start
      // is no child of whatever span was active where run() was called, and an attempt of a job
      // that carries no trace context starts a trace of its own.
      underRootContext(this.options.telemetry, () => {
        for (const lane of this.lanes) lane.sweeper.start();
        this.loop = this.fetchLoop();
        void this.announceReady();
        void this.warnAboutRedis();
      }, (error) => this.reportError(error));
    }
    return this.closed();
  }

  /** Resolves when its connections are ready: the shared one, and the marker's (or, partitioned, the wake channels' subscriptions). */
  async waitUntilReady(): Promise<void> {
    await Promise.all([this.client.ping(), this.blockingClient?.ping(), this.waker?.start()]);
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
    while (this.state === 'paused' && !this.forced && (this.running > 0 || this.fetching)) await this.sleeper.sleep(Infinity);
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
    await setManualRateLimit(this.client, this.partitionKeys, expireTimeMs);
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
    if (force && !this.forced) {
      this.forced = true;
      // A close() already waits for the running jobs: close(true) now cuts that wait short.
      if (this.closing) this.giveUpJobs(this.forcedCloseReason());
    }
    this.closing ??= this.shutdown();
    this.closeRequested();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    const started = this.state !== 'created';
    this.moveTo('closing');
    this.emitSafely('closing');
    const probe = new Sleeper();
    let done = false;
    const drained = this.drain(started).then(() => true, (error: Error) => {
      this.reportError(error);
      return true;
    });
    const { closeTimeout } = this.options;
    const silent = Number.isFinite(closeTimeout)
      ? redisSilentFor(this.client, closeTimeout, probe, () => done).then((silentTooLong) => !silentTooLong)
      : new Promise<boolean>(() => undefined);
    const inTime = await Promise.race([drained, silent]);
    done = true;
    probe.wake();
    if (!inTime) this.abandon();
    this.moveTo('closed');
    this.emitSafely('closed');
  }

  /** The orderly close: each step may wait on Redis, which is why shutdown() bounds it. */
  private async drain(started: boolean): Promise<void> {
    for (const lane of this.lanes) lane.finisher.flush(); // finishes of this turn go now, not after the connection closed
    // Jobs held ahead that have not started go back to wait; close(true) gives them up as it gives up the running ones.
    if (!this.forced) this.slots?.close();
    this.source.interrupt();
    if (this.forced) this.giveUpJobs(this.forcedCloseReason());
    this.closeStep = 'the fetch loop (its moveToActive call)';
    if (started) await this.loop;
    this.closeStep = 'its running jobs to end';
    while (!this.forced && this.running > 0) await this.sleeper.sleep(Infinity);
    this.closeStep = 'its sandboxes to exit';
    await this.sandbox?.close(this.forced);
    this.closeStep = 'the stalled sweep to stop';
    await Promise.all(this.lanes.map((lane) => lane.sweeper.stop()));
    // Left undelivered they would wait for a sweep (docs/flows.md): their parents hear now.
    this.closeStep = 'the notices of finished children to reach their parents';
    if (!this.forced) await Promise.all(this.lanes.map((lane) => lane.notices.drain()));
    this.closeStep = 'the heartbeat to stop (a renewal in flight)';
    await Promise.all(this.lanes.map((lane) => lane.locks.close()));
    if (this.ownsLockManager) await this.lockManager.close();
    // After the heartbeat stopped, so no tick in flight writes the entry back.
    this.closeStep = 'its registry entry to go';
    await this.presence.leave().catch((error: Error) => this.reportError(error));
    this.closeStep = 'its last metrics to be sent';
    await this.metrics?.close();
    this.closeStep = 'its connection to close';
    for (const lane of this.lanes) lane.detach();
    if (this.ownsClient) await closeClient(this.client);
    this.dropOwnConnections();
  }

  /** The connections a worker always owns: the marker's, or the wake channels'. */
  private dropOwnConnections(): void {
    if (this.blockingClient) dropClient(this.blockingClient);
    this.waker?.close();
  }

  /** Why a close(true) aborts a running job's signal. */
  private forcedCloseReason(): Error {
    return new Error(`worker ${this.id} closed without waiting for its jobs`);
  }

  /** Aborts every running job's signal; the waits that wait for those jobs end now. */
  private giveUpJobs(reason: Error): void {
    for (const lane of this.lanes) lane.locks.abortAll(reason);
    void this.sandbox?.close(true); // after the aborts: their jobs reject with the signal's reason
    this.sleeper.wake();
  }

  /**
   * closeTimeout ran out: the rest of drain() is left to settle whenever Redis answers (or never).
   * Jobs, heartbeat, sweep and connections are given up now, without a word to Redis.
   */
  private abandon(): void {
    const held = this.lanes.flatMap((lane) => lane.locks.jobIds);
    const error = new CloseTimeoutError(this.name, this.id, this.options.closeTimeout, this.closeStep, held);
    this.forced = true;
    this.giveUpJobs(error);
    for (const lane of this.lanes) {
      lane.locks.abandon();
      lane.detach();
      void lane.sweeper.stop();
    }
    if (this.ownsLockManager) void this.lockManager.close();
    if (this.ownsClient) dropClient(this.client);
    this.dropOwnConnections();
    this.reportError(error);
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

  /** Fetches while there is a free slot; blocks on the marker when the queue has nothing ready. */
  private async fetchLoop(): Promise<void> {
    if (!(await this.preflight())) return;
    let failures = 0;
    while (this.isRunning()) {
      if (this.state === 'paused' || this.running >= this.holds) {
        await this.sleeper.sleep(Infinity); // until resumed, a slot is freed, or the worker closes
        continue;
      }
      const limitedFor = this.limits.blockedFor();
      if (limitedFor > 0) {
        await this.sleeper.sleep(limitedFor); // a manual rate limit: until it lifts, it changes, or the worker closes
        continue;
      }
      try {
        const token = uuid();
        const sentAt = Date.now();
        let lane;
        let pickup;
        let sentTwice;
        this.fetching = true;
        try {
          ({ lane, pickup, sentTwice } = await this.source.fetch(token));
        } finally {
          this.fetching = false;
          this.sleeper.wake(); // a pause() may be waiting for this fetch
        }
        failures = 0;
        // Ours as much as pickup.job is (the same token locks them): run them, not strand them.
        for (const job of sentTwice) this.startChain(lane, { id: job.id, fields: job.fields, token, acquiredAt: sentAt });
        if (pickup.job) {
          this.idleEmitted = false;
          this.startChain(lane, { id: pickup.job.id, fields: pickup.job.fields, token, acquiredAt: sentAt });
          continue;
        }
        if (!this.idleEmitted && this.running === 0) {
          this.idleEmitted = true;
          this.emitSafely('drained');
        }
        if (this.state !== 'running') continue; // paused or closing meanwhile: the loop's top decides
        await this.source.waitForWork();
      } catch (error) {
        if (!this.isRunning()) continue; // closing: the error is its dropped connection
        this.reportError(error as Error);
        await this.backOff(failures++);
      }
    }
  }

  /**
   * What must hold before the first pickup: a Redis recent enough on every master; for a
   * partitioned queue, the partition count Redis records, and the wake channels subscribed. A
   * refusal is reported and closes the worker (false); a failed subscription (no subscriber for a
   * slot during a failover) is reported and tried again with the fetch loop's backoff.
   */
  private async preflight(): Promise<boolean> {
    const partitioned = this.waker !== undefined;
    const refusal = (await redisVersionError(this.client, partitioned ? PARTITIONS_NEED : undefined))
      ?? (partitioned ? await partitionCountError(this.client, this.lanes[0].keys, this.name, this.lanes.length, 'this worker').catch(() => undefined) : undefined);
    if (refusal) {
      this.reportError(refusal);
      void this.close();
      return false;
    }
    if (!(await this.startPresence())) return false;
    for (let failures = 0; this.waker && this.isRunning(); failures++) {
      try {
        await this.waker.start();
        return true;
      } catch (error) {
        if (!this.isRunning()) return false;
        this.reportError(error as Error);
        await this.backOff(failures);
      }
    }
    return this.isRunning();
  }

  /**
   * Before the first pickup: the worker's registry entry written and the queue's limits read (a
   * worker must not take jobs blind to a queue-wide bound), tried again with the backoff until it
   * lands; from then on every heartbeat tick carries both.
   */
  private async startPresence(): Promise<boolean> {
    for (let failures = 0; this.isRunning(); failures++) {
      try {
        await this.presence.start();
        this.lanes[0].locks.carry(this.presence);
        return true;
      } catch (error) {
        if (!this.isRunning()) return false;
        this.reportError(error as Error);
        await this.backOff(failures);
      }
    }
    return false;
  }

  /** A limit changed (read by a tick): waits begun under the old value end, and the fetch loop looks again. */
  private limitsChanged(): void {
    this.partitionFetcher?.wakeAll();
    this.source.stopWaiting();
    this.sleeper.wake();
  }

  /** After the n-th failure in a row: 100 ms doubling up to 5 s, cut short by close(). */
  private async backOff(failures: number): Promise<void> {
    const until = Date.now() + Math.min(5000, 100 * 2 ** failures);
    while (this.isRunning() && Date.now() < until) await this.sleeper.sleep(until - Date.now());
  }

  /** Runs a job and then each job fetch-next hands over (from the same lane), in one slot. */
  private startChain(lane: WorkerLane, first: ActiveJob): void {
    this.running++;
    lane.running++;
    void (async () => {
      let current: ActiveJob | undefined = first;
      // Not while a manual rate limit holds (a worker without a `limiter` passes no max to check).
      const fetchNext = () => this.state === 'running' && this.limits.blockedFor() === 0 && this.source.mayChain(lane);
      try {
        while (current && !this.forced) current = await lane.runner.run(current, fetchNext);
      } catch (error) {
        this.reportError(error as Error);
      } finally {
        this.running--;
        lane.running--;
        this.source.freed(lane);
        this.sleeper.wake();
      }
    })();
  }

  /** One CONFIG GET at start: an evicting Redis can drop jobs silently, so say so loudly. */
  private async warnAboutRedis(): Promise<void> {
    const warning = await evictionPolicyWarning(this.client);
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
