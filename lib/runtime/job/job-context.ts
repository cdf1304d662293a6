import type { FlowScripts } from '../../protocol/flow-scripts.js';
import type { JobControlScripts } from '../../protocol/job-control-scripts.js';
import type { Keys } from '../../protocol/keys.js';
import type { RedisClient } from '../../protocol/script.js';
import type { Scripts } from '../../protocol/scripts.js';

// What a Job and the operations on one job (this floor) are given: the queue's connection, keys
// and scripts, and the port through which they reach the flow operations of the floor above.

/** A run of a job as an operation on it needs it: which job, and the pickup's fencing number. */
export interface JobRun {
  readonly id: string;
  readonly attemptsStarted: number;
}

/**
 * The worker's side of one run of a job (one pickup, one lock token), as the job's own
 * moveToDelayed and moveToWaitingChildren need it: the worker stops renewing the lock the move releases, and then neither
 * completes nor fails the job (lib/runtime/worker/job-runner.ts).
 */
export interface RunOwnership {
  /** The lock token of the run. */
  readonly token: string;
  /** A move out of active under `token` is about to be sent: a renewal that finds no lock is now the move's to judge. */
  leaving(): void;
  /** The move landed: the job is no longer this run's (to delayed, the default, or to waiting-children). */
  left(to?: 'delayed' | 'waiting-children'): void;
  /** The move was not made (moveToWaitingChildren with nothing to wait for): the run goes on as before. */
  stayed(): void;
  /** The job is a flow parent now (it added children): its finish takes its flow keys with it. */
  becameParent(): void;
}

/** What job.remove and queue.remove take (BullMQ's shape). */
export interface RemoveOptions {
  /** Remove a parent's unsettled children too (in their queues). Default true. */
  removeChildren?: boolean;
}

/** What job.moveToWaitingChildren takes (BullMQ's shape). */
export interface WaitingChildrenOptions {
  /** Wait only while this child (its id and its queue's `P:{Q}` key) has not settled. */
  child?: { id: string; queue: string };
}

/**
 * The operations of flows/ a Job reaches through its context: they live a floor above job/
 * (flows/flow-operations.ts implements them), so the Job names only this port. Whoever builds a
 * context (a QueuePart, a worker's lane) passes flows/'s FLOW_OPERATIONS.
 */
export interface FlowOperations {
  /** job.remove: see removeJobOfFlow (flows/flow-removal.ts). */
  remove(context: JobContext, jobId: string, opts: RemoveOptions): Promise<'removed' | 'locked' | 'missing'>;
  /** job.moveToWaitingChildren: see moveJobToWaitingChildren (flows/step-jobs.ts). */
  moveToWaitingChildren(job: JobRun, context: JobContext, token: unknown, opts: WaitingChildrenOptions): Promise<boolean>;
  /** A finish by hand left a child's notice in its queue: deliver it to its parent now (ParentNotices). */
  deliverNotice(context: JobContext, jobId: string): Promise<void>;
  /** job.removeChildDependency: see removeChildDependency (flows/child-dependency.ts). */
  removeChildDependency(context: JobContext, jobId: string, parentKey: string | undefined): Promise<boolean>;
}

/** What a Job needs of its queue to act on itself. */
export interface JobContext<J = unknown> {
  queueName: string;
  keys: Keys;
  scripts: Scripts;
  /** The job control scripts (updateData, changeDelay, changePriority, promote, moveToDelayed). */
  control: JobControlScripts;
  /** The queue's flow scripts (moveToWaitingChildren; docs/flows.md). */
  flows?: FlowScripts;
  /** The queue's events stream bound, for the scripts a removal sends to its children's queues. */
  maxEvents?: number;
  client: RedisClient;
  /** The largest data updateData accepts, in bytes of JSON: the Queue's maxDataSize (a Worker's jobs: the default, 1 MiB). */
  maxDataSize?: number;
  /** What the job reaches of flows/, a floor above this one: the port (FlowOperations). */
  flowOperations: FlowOperations;
  /** A partitioned queue's: tells its workers the job's partition has work again (lib/runtime/queue/queue-part.ts). */
  wake?(): void;
  /**
   * A Worker's: the run of this job it holds under `token`, if any, so that the handler's own
   * job.moveToDelayed tells the worker (lib/runtime/queue/job-control.ts).
   */
  ownRun?(jobId: string, token: string): RunOwnership | undefined;
  /** Told when a job updates its progress (a Worker sets it, to emit its `progress` event). */
  onProgress?(job: J, progress: unknown): void;
}
