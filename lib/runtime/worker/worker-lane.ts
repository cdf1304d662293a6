import { Keys } from '../../protocol/keys.js';
import { autoIdPrefix, partitionQueueName } from '../../protocol/partitions.js';
import type { RedisClient } from '../../protocol/script.js';
import { Scripts } from '../../protocol/scripts.js';
import type { SweepResult } from '../../protocol/script-shapes.js';
import { Fetcher } from './fetcher.js';
import { FinishBatcher } from './finish-batcher.js';
import type { JobContext } from '../job/job-context.js';
import type { Job } from '../job/job.js';
import { FLOW_OPERATIONS } from '../flows/flow-operations.js';
import { JobRunner } from './job-runner.js';
import type { RunnerEvents } from './job-runner-options.js';
import type { ProcessorFunction } from '../queue/processor.js';
import type { LockManager, WorkerLocks } from '../locks/lock-manager.js';
import type { ResolvedWorkerOptions } from './worker-options.js';
import type { RunSlots } from './run-slots.js';
import { StalledSweeper } from './stalled-sweeper.js';
import { publishWake } from '../core/wake-channel.js';
import { SchedulerScripts } from '../../protocol/scheduler-scripts.js';
import { JobControlScripts } from '../../protocol/job-control-scripts.js';
import { SchedulerChain } from '../schedulers/scheduler-chain.js';
import type { WorkerLimits } from './worker-limits.js';
import { ParentNotices } from '../flows/parent-notices.js';
import { FlowScripts } from '../../protocol/flow-scripts.js';
import { FlowRecovery } from '../flows/flow-recovery.js';
import { registerRunner, unregisterRunner } from '../flows/running-parents.js';
import { AttemptSpans } from './attempt-spans.js';
import { FinishedTrim } from './finished-trim.js';
import { placeStalledByPriority } from './stalled-priorities.js';
import { AdminScripts } from '../../protocol/admin-scripts.js';

/** What a lane needs from its worker. */
export interface LaneOwner {
  workerId: string;
  queueName: string;
  partitions: number;
  client: RedisClient;
  /** The marker's blocking connection: a plain queue's only lane blocks on it; a partitioned queue's lanes never do. */
  blockingClient?: RedisClient;
  options: ResolvedWorkerOptions;
  /** The limits every pickup and finish keeps (the queue's, as the heartbeat last read them, and the worker's own). */
  limits: WorkerLimits;
  lockManager: LockManager;
  processor: ProcessorFunction;
  /** The processor runs a file in sandboxes (threads or processes), not a function in this process. */
  sandboxed: boolean;
  runnerEvents: RunnerEvents;
  onProgress: JobContext<Job>['onProgress'];
  onSwept(lane: WorkerLane, result: SweepResult): void;
  onSweepError(error: Error): void;
  running(): number;
  /** Jobs the worker holds at most (concurrency + prefetch). */
  holds: number;
  /** With prefetch: where a job held ahead waits for a handler to end. */
  slots?: RunSlots;
}

/**
 * The part of a worker that serves one hash tag: the whole queue, or one partition of a
 * partitioned one. Everything in it speaks to that one slot: its pickups (Fetcher), its
 * heartbeat (its WorkerLocks with the worker's LockManager), its stalled sweep, its finishes and
 * the runner that drives a job from pickup to finish.
 */
export class WorkerLane {
  readonly keys: Keys;
  readonly scripts: Scripts;
  readonly locks: WorkerLocks;
  readonly fetcher: Fetcher;
  readonly sweeper: StalledSweeper;
  readonly finisher: FinishBatcher;
  readonly runner: JobRunner;
  /** The step after a scheduler's job starts, and the repair of schedulers whose chain a lost job broke. */
  readonly schedulers: SchedulerChain;
  /** The notices this lane's finished children owe their parents (docs/flows.md), sent and swept. */
  readonly notices: ParentNotices;
  /** Parents of this queue left behind by a dead producer or a dead worker (docs/protocol.md, "Flows: recovery"). */
  readonly flowRecovery: FlowRecovery;
  /** What the jobs this lane takes act through (job.updateProgress, moveToDelayed...). */
  readonly context: JobContext<Job>;
  /** How many of this lane's jobs the worker runs now. */
  running = 0;
  private readonly client: RedisClient;

  /** `first`: the worker's first lane, whose heartbeat timer the others share (one timer per worker). */
  constructor(owner: LaneOwner, readonly index: number, first?: WorkerLane) {
    const { options, client, partitions } = owner;
    this.client = client;
    const queue = partitionQueueName(owner.queueName, index, partitions);
    this.keys = new Keys(queue, options.prefix);
    this.scripts = new Scripts(client, this.keys, options.maxEvents, autoIdPrefix(index, partitions));
    const { lockDuration, lockRenewTime, heartbeatLateThreshold, lockRenewUnsafe } = options;
    // Throws on a closed LockManager: the worker drops its connections then.
    this.locks = owner.lockManager.register({
      workerId: owner.workerId, queue, scripts: this.scripts, client, lockDuration, lockRenewTime, heartbeatLateThreshold,
      allowLapsingRenewTime: lockRenewUnsafe,
    }, first?.locks);
    this.fetcher = new Fetcher(this.scripts, client, owner.blockingClient, this.keys, { lockDuration, drainDelay: options.drainDelay, limits: owner.limits });
    const wake = partitions === 1 ? undefined : () => this.wake();
    this.schedulers = new SchedulerChain(new SchedulerScripts(client, this.keys, options.maxEvents), client, this.keys, owner.onSweepError, wake);
    // A notice older than this was left by a worker that died after its finish (a live one delivers it within a round trip).
    this.notices = new ParentNotices(client, this.keys, options.maxEvents, owner.onSweepError, Math.min(options.stalledInterval, 5000));
    this.flowRecovery = new FlowRecovery(client, this.keys, options.maxEvents, this.notices, owner.onSweepError);
    const control = new JobControlScripts(client, this.keys, options.maxEvents);
    const onSwept = (result: SweepResult) => {
      // The fixed sweep knows nothing of flows: a child it failed for good is told to its parent here.
      this.notices.noticeStalledFailures(result.movedToFailed.map(({ jobId }) => jobId));
      // Nor of priorities: a prioritized job it gave back is placed by its priority again.
      placeStalledByPriority(client, this.keys, control, result.movedToWait.map(({ jobId }) => jobId)).catch(owner.onSweepError);
      owner.onSwept(this, result);
    };
    const trims = new FinishedTrim(new AdminScripts(client, this.keys, options.maxEvents));
    this.sweeper = new StalledSweeper(this.scripts, client, this.keys, options, onSwept, owner.onSweepError,
      () => Promise.all([this.schedulers.repair(), this.notices.sweep(), this.flowRecovery.sweep(), trims.sweep()]));
    const flows = new FlowScripts(client, this.keys, options.maxEvents);
    const context: JobContext<Job> = (this.context = {
      queueName: owner.queueName, keys: this.keys, scripts: this.scripts, control, flows, maxEvents: options.maxEvents, client, wake, onProgress: owner.onProgress,
      flowOperations: FLOW_OPERATIONS,
    });
    this.finisher = new FinishBatcher(this.scripts, lockDuration, owner.limits, owner.holds, owner.running);
    const spans = options.telemetry && new AttemptSpans(options.telemetry, {
      queueName: owner.queueName, partition: partitions === 1 ? undefined : index, workerId: owner.workerId, workerName: options.name,
    }, owner.runnerEvents.error, !owner.sandboxed);
    this.runner = new JobRunner({
      processor: owner.processor, scripts: this.scripts, context, locks: this.locks, lockDuration, finisher: this.finisher, events: owner.runnerEvents,
      schedulers: this.schedulers, backoffStrategy: options.backoffStrategy, jobTimeout: options.jobTimeout, flows: { notices: this.notices }, trims, spans, slots: owner.slots,
    });
    context.ownRun = (jobId, token) => this.runner.ownRun(jobId, token);
    registerRunner(this.runner);
  }

  /** The lane's runner is no longer told of children added to its jobs (the worker closed). */
  detach(): void {
    unregisterRunner(this.runner);
  }

  /** Tells the workers of a partitioned queue that this partition has work (publishWake). */
  wake(): void {
    publishWake(this.client, this.keys);
  }
}
