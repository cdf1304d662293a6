import { Keys } from '../../protocol/keys.js';
import { autoIdPrefix, partitionQueueName } from '../../protocol/partitions.js';
import type { RedisClient } from '../../protocol/script.js';
import { Scripts, type SweepResult } from '../../protocol/scripts.js';
import { Fetcher } from './fetcher.js';
import { FinishBatcher } from './finish-batcher.js';
import type { JobContext } from '../queue/job.js';
import { JobRunner, type ProcessorFunction, type RunnerEvents } from './job-runner.js';
import type { LockManager, WorkerLocks } from '../locks/lock-manager.js';
import type { ResolvedWorkerOptions } from '../options.js';
import { StalledSweeper } from './stalled-sweeper.js';
import { publishWake } from '../wake-channel.js';

/** What a lane needs from its worker. */
export interface LaneOwner {
  workerId: string;
  queueName: string;
  partitions: number;
  client: RedisClient;
  /** The marker's blocking connection: a plain queue's only lane blocks on it; a partitioned queue's lanes never do. */
  blockingClient?: RedisClient;
  options: ResolvedWorkerOptions;
  lockManager: LockManager;
  processor: ProcessorFunction;
  runnerEvents: RunnerEvents;
  onProgress: JobContext['onProgress'];
  onSwept(lane: WorkerLane, result: SweepResult): void;
  onSweepError(error: Error): void;
  running(): number;
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
    const maxActive = partitions > 1 ? options.partitionConcurrency : Infinity;
    this.fetcher = new Fetcher(this.scripts, client, owner.blockingClient, this.keys, { ...options, maxActive });
    this.sweeper = new StalledSweeper(this.scripts, client, this.keys, options, (result) => owner.onSwept(this, result), owner.onSweepError);
    const wake = partitions === 1 ? undefined : () => this.wake();
    const context: JobContext = { queueName: owner.queueName, keys: this.keys, scripts: this.scripts, client, wake, onProgress: owner.onProgress };
    this.finisher = new FinishBatcher(this.scripts, lockDuration, options.limiter, options.concurrency, owner.running);
    this.runner = new JobRunner(owner.processor, this.scripts, context, this.locks, lockDuration, this.finisher, owner.runnerEvents);
  }

  /** Tells the workers of a partitioned queue that this partition has work (publishWake). */
  wake(): void {
    publishWake(this.client, this.keys);
  }
}
