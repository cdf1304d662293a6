import { EchoMQError, EchoMQOptionError } from '../../protocol/errors.js';
import { assertCustomJobId, describe } from '../../protocol/names.js';
import { parseSchedulerJobId } from '../../protocol/scheduler-ids.js';
import type { JobOptions } from '../core/job-options.js';
import { fromJson, toJson } from '../core/serialize.js';
import type { QueueEvents } from '../events/queue-events.js';
import { childrenValues, dependencies, dependenciesCount, type Dependencies, type DependenciesCount } from './dependencies.js';
import type { JobContext, RemoveOptions, WaitingChildrenOptions } from './job-context.js';
import { changeJobDelay, changeJobPriority, moveJobToDelayed, promoteJob, updateJobData, type PriorityChange } from './job-control.js';
import { CorruptJobError } from './job-errors.js';
import { getJobStatus, type JobStatus } from './job-state.js';
import { waitUntilFinished } from './wait-until-finished.js';
import { completeByHand, extendLockByHand, failByHand, giveBackByHand } from './manual-moves.js';

/**
 * Whether a string can be a job's id: an automatic id (a plain integer) or a custom id as add()
 * accepts it. Any other string would address another key of the queue (`wait`, `<id>:logs`), so a
 * lookup by it answers "no such job" instead of WRONGTYPE or another key's contents.
 */
export function canNameJob(jobId: unknown): jobId is string {
  if (typeof jobId !== 'string') return false;
  if (/^\d+$/.test(jobId) || parseSchedulerJobId(jobId)) return true;
  try {
    assertCustomJobId(jobId);
    return true;
  } catch {
    return false;
  }
}

/** What Job.create, createBulk and fromId take (BullMQ's static forms): a Queue. */
export interface JobQueue<Data, Result> {
  add(name: string, data: Data, opts?: JobOptions): Promise<Job<Data, Result>>;
  addBulk(jobs: Array<{ name: string; data: Data; opts?: JobOptions }>): Promise<Array<Job<Data, Result>>>;
  getJob(jobId: string): Promise<Job<Data, Result> | undefined>;
}

/**
 * A job: its data and state as read from its hash, and a few methods that act on it.
 * `attemptsStarted` is the job's fencing number: it grows by one at every pickup and never
 * repeats, so a handler can pass it to its own side effects to refuse a stale writer.
 */
export class Job<Data = unknown, Result = unknown> {
  progress: unknown = 0;
  returnvalue?: Result;
  failedReason?: string;
  stacktrace: string[] = [];
  attemptsMade = 0;
  attemptsStarted = 0;
  stalledCounter = 0;
  processedOn?: number;
  finishedOn?: number;
  /** The id of the job scheduler that made this job (BullMQ's name), undefined for a job added by add. */
  repeatJobKey?: string;
  /**
   * The delay it was last given, ms: by add, changeDelay or moveToDelayed (0 after promote). Its
   * due time is in the delayed set; `timestamp` stays the add's.
   */
  delay: number;
  /** 0 (none) or 1 (highest) to 2,097,151: as added, or as changePriority stored it. */
  priority: number;
  /** Set by discard(): a failure of this run is final. Local to this object, as in BullMQ. */
  #discarded = false;
  /** The deduplication id it was added with (BullMQ's name; docs/deduplication.md), from the hash's `deid`. */
  deduplicationId?: string;
  /** A flow's child: its parent's job key (`P:{Q}:<id>`; docs/flows.md). */
  parentKey?: string;
  /** A flow's child: its parent (BullMQ's shape; queueKey is `P:{Q}`). */
  parent?: { id: string; queueKey: string };

  constructor(
    private readonly context: JobContext,
    readonly id: string,
    readonly name: string,
    /** As read or added; updateData replaces it. */
    public data: Data,
    readonly opts: JobOptions,
    readonly timestamp: number,
  ) {
    this.delay = opts.delay ?? 0;
    this.priority = opts.priority ?? 0;
  }

  get queueName(): string {
    return this.context.queueName;
  }

  /** BullMQ's `Job.create(queue, name, data, opts)`: `queue.add(name, data, opts)`. */
  static create<D, R>(queue: JobQueue<D, R>, name: string, data: D, opts?: JobOptions): Promise<Job<D, R>> {
    return queue.add(name, data, opts);
  }

  /** BullMQ's `Job.createBulk(queue, jobs)`: `queue.addBulk(jobs)`. */
  static createBulk<D, R>(queue: JobQueue<D, R>, jobs: Array<{ name: string; data: D; opts?: JobOptions }>): Promise<Array<Job<D, R>>> {
    return queue.addBulk(jobs);
  }

  /** BullMQ's `Job.fromId(queue, jobId)`: `queue.getJob(jobId)`, undefined when there is none. */
  static fromId<D, R>(queue: JobQueue<D, R>, jobId: string): Promise<Job<D, R> | undefined> {
    return queue.getJob(jobId);
  }

  /** Builds a job from HGETALL's reply (a flat array or an object). Throws CorruptJobError. */
  static fromHash<D = unknown, R = unknown>(context: JobContext, id: string, hash: string[] | Record<string, string>): Job<D, R> {
    const fields = Array.isArray(hash) ? pairsToRecord(hash) : hash;
    if (fields.name === undefined) throw new CorruptJobError(id, 'it has no "name" field');
    const job = new Job<D, R>(context, id, fields.name, parseField<D>(id, fields, 'data') as D,
      parseField<JobOptions>(id, fields, 'opts') ?? {}, Number(fields.timestamp ?? 0));
    job.progress = parseField(id, fields, 'progress') ?? 0;
    job.returnvalue = parseField<R>(id, fields, 'returnvalue');
    job.failedReason = fields.failedReason;
    job.stacktrace = parseField<string[]>(id, fields, 'stacktrace') ?? [];
    job.attemptsMade = Number(fields.atm ?? 0);
    job.attemptsStarted = Number(fields.ats ?? 0);
    job.stalledCounter = Number(fields.stc ?? 0);
    job.processedOn = fields.processedOn ? Number(fields.processedOn) : undefined;
    job.finishedOn = fields.finishedOn ? Number(fields.finishedOn) : undefined;
    if (fields.delay !== undefined) job.delay = Number(fields.delay);
    if (fields.priority !== undefined) job.priority = Number(fields.priority);
    if (fields.rjk !== undefined) job.repeatJobKey = fields.rjk;
    if (fields.deid !== undefined) job.deduplicationId = fields.deid;
    if (fields.parentKey !== undefined) {
      job.parentKey = fields.parentKey;
      job.parent = parseField<{ id: string; queueKey: string }>(id, fields, 'parent');
    }
    return job;
  }

  /** Stores progress (any JSON value) and emits a `progress` event. */
  async updateProgress(progress: unknown): Promise<void> {
    const json = toJson(progress, 'progress');
    await this.context.control.updateProgress(this.id, json);
    this.progress = progress;
    this.context.onProgress?.(this as Job, progress);
  }

  /** Appends a line to the job's log; returns how many lines it keeps. */
  async log(line: string): Promise<number> {
    if (typeof line !== 'string') throw new EchoMQOptionError('log line', 'must be a string');
    return this.context.control.addLog(this.id, line, this.opts.keepLogs ?? 0);
  }

  /** The job's log lines, oldest first. */
  async getLogs(start = 0, end = -1): Promise<string[]> {
    return this.context.client.lrange(this.context.keys.logs(this.id), start, end);
  }

  /** Deletes the job's log lines, or all but the newest `keepLogs` (BullMQ's name). */
  async clearLogs(keepLogs?: number): Promise<void> {
    if (keepLogs !== undefined && (!Number.isInteger(keepLogs) || keepLogs < 0)) {
      throw new EchoMQOptionError('keepLogs', `must be a whole number >= 0, got ${describe(keepLogs)}`);
    }
    const key = this.context.keys.logs(this.id);
    if (keepLogs) await this.context.client.ltrim(key, -keepLogs, -1);
    else await this.context.client.del(key);
  }

  /**
   * Where the job is, under BullMQ's names: `waiting` (in wait, or paused), `prioritized`,
   * `delayed`, `active`, `waiting-children`, `completed`, `failed`, or `unknown` (no state holds it).
   */
  async getState(): Promise<JobStatus> {
    return getJobStatus(this.context.client, this.context.keys, this.id);
  }

  /** BullMQ's state predicates: each one getState() read. */
  async isCompleted(): Promise<boolean> {
    return (await this.getState()) === 'completed';
  }

  async isFailed(): Promise<boolean> {
    return (await this.getState()) === 'failed';
  }

  async isDelayed(): Promise<boolean> {
    return (await this.getState()) === 'delayed';
  }

  async isActive(): Promise<boolean> {
    return (await this.getState()) === 'active';
  }

  /** In wait or paused (BullMQ's `waiting`); a prioritized job answers false, as in BullMQ. */
  async isWaiting(): Promise<boolean> {
    return (await this.getState()) === 'waiting';
  }

  async isWaitingChildren(): Promise<boolean> {
    return (await this.getState()) === 'waiting-children';
  }

  /**
   * Removes the job with its flow keys; refuses (EchoMQError -3) while a worker holds its lock. A
   * parent's unsettled children go too (in their queues, after it), unless `removeChildren` is
   * false; a child's parent drops it as a dependency (docs/flows.md, "Removing jobs of a flow").
   */
  async remove(opts: RemoveOptions = {}): Promise<void> {
    const outcome = await this.context.flowOperations.remove(this.context, this.id, opts);
    if (outcome === 'locked') throw new EchoMQError(-3, this.id, 'removeJob-14.lua', 'a worker holds its lock; it can be removed once it finished');
    if (outcome === 'missing') throw new EchoMQError(-1, this.id, 'removeJob-14.lua');
  }

  /** Sends a failed (or, with 'completed', a completed) job back to wait for a new round of attempts. */
  async retry(from: 'failed' | 'completed' = 'failed'): Promise<void> {
    if (from !== 'failed' && from !== 'completed') throw new EchoMQOptionError('from', `is ${describe(from)}; a job is retried from "failed" or "completed"`);
    await this.context.control.reprocessJob(this.id, from);
    this.context.wake?.();
    this.attemptsMade = 0;
    this.failedReason = undefined;
    this.finishedOn = undefined;
  }

  /** Replaces the job's data, in any state (BullMQ's updateData). Refused: EchoMQError -1 when the job is gone. */
  async updateData(data: Data): Promise<void> {
    await updateJobData(this.context, this.id, data);
    this.data = data;
  }

  /**
   * A delayed job becomes due `delay` ms from now (the marker and, partitioned, the wake channel
   * tell the workers). Refused: EchoMQError -3 when it is not delayed, -1 when it is gone.
   */
  async changeDelay(delay: number): Promise<void> {
    this.delay = await changeJobDelay(this.context, this.id, delay);
  }

  /**
   * Stores the job's priority (0 = none); a job in wait, paused or prioritized moves where that
   * priority puts it, one in another state gets it when it is next made ready. `lifo` applies to
   * priority 0, as in add. Refused: EchoMQError -1 when the job is gone.
   */
  async changePriority(change: PriorityChange): Promise<void> {
    this.priority = await changeJobPriority(this.context, this.id, change);
  }

  /** A delayed job becomes ready now. Refused: EchoMQError -3 when it is not delayed, -1 when it is gone. */
  async promote(): Promise<void> {
    await promoteJob(this.context, this.id);
    this.delay = 0;
  }

  /**
   * In a handler: if this run fails, the job fails for good, whatever attempts it has left. Local
   * to this Job object (nothing is written), as in BullMQ.
   */
  discard(): void {
    this.#discarded = true;
  }

  /** True once discard() was called on this object. */
  get discarded(): boolean {
    return this.#discarded;
  }

  /**
   * A job taken by hand (worker.getNextJob(token)) completes: its lock checked and released, kept
   * or removed by its removeOnComplete. `fetchNext` is BullMQ's: no next job is taken here (call
   * getNextJob again). Refused, nothing changed: EchoMQError -2, -6, -3, -1 (manual-moves.ts).
   */
  async moveToCompleted(returnValue: Result, token: string, _fetchNext?: boolean): Promise<void> {
    await completeByHand(this, this.context, returnValue, token);
  }

  /** A job taken by hand fails this attempt: retried after its backoff while attempts are left, else failed for good. */
  async moveToFailed(error: Error, token: string, _fetchNext?: boolean): Promise<void> {
    await failByHand(this, this.context, error, token);
  }

  /** A job taken by hand goes back to wait, next in line, its attempt not counted (as for a rate limit). Answers 0. */
  async moveToWait(token: string): Promise<number> {
    await giveBackByHand(this, this.context, token);
    return 0;
  }

  /** Renews the lock of a job taken by hand for `duration` ms: 1, or 0 when `token` does not hold it. */
  extendLock(token: string, duration: number): Promise<number> {
    return extendLockByHand(this, this.context, token, duration);
  }

  /**
   * In a handler: sends the running job to delayed until `timestamp` (ms since the epoch; now when
   * earlier) and releases its lock, without counting an attempt. Then throw a DelayedError: the
   * worker neither completes nor fails the job, which runs again from the start when it is due.
   * `token` is the handler's own ({ token } of its second argument). Refused, nothing changed:
   * EchoMQError -2 (the lock lapsed), -6 (another worker holds it), -3 (not active), -1 (gone).
   */
  async moveToDelayed(timestamp: number, token: string): Promise<void> {
    this.delay = await moveJobToDelayed(this, this.context, timestamp, token);
  }

  /**
   * In a handler, after adding children (`queue.add(name, data, { parent: { id: job.id, queue:
   * job.queueQualifiedName } })`): when any of them (or `opts.child`) has not settled, the job
   * leaves active for waiting-children, its lock released, and this answers true: then throw a
   * WaitingChildrenError, and the job runs again from the start once its children have settled
   * (keep the step in job.data, with updateData). False when there is nothing to wait for: nothing
   * changed, and the handler goes on. `token` is the handler's own. Refused, nothing changed:
   * EchoMQError -2 (the lock lapsed), -6 (another worker holds it), -3 (not active), -1 (gone).
   */
  moveToWaitingChildren(token: string, opts: WaitingChildrenOptions = {}): Promise<boolean> {
    return this.context.flowOperations.moveToWaitingChildren(this, this.context, token, opts);
  }

  /** `P:{Q}`, the queue's key as a child's `opts.parent.queue` names it (BullMQ's name). */
  get queueQualifiedName(): string {
    return this.context.keys.queueKey;
  }

  /** A parent's completed children's return values, keyed by child job key (docs/flows.md). */
  getChildrenValues<T = unknown>(): Promise<Record<string, T>> {
    return childrenValues(this.context.client, this.context.keys, this.id) as Promise<Record<string, T>>;
  }

  /**
   * A child leaves its parent before it finishes (BullMQ's name): its parent forgets it, and starts
   * if it waited for nothing else. True when it had a parent that still waited for it.
   */
  async removeChildDependency(): Promise<boolean> {
    const removed = await this.context.flowOperations.removeChildDependency(this.context, this.id, this.parentKey);
    if (removed) {
      this.parentKey = undefined;
      this.parent = undefined;
    }
    return removed;
  }

  /** The children that failed under ignoreDependencyOnFailure: their failedReason, by child job key (BullMQ's name). */
  async getIgnoredChildrenFailures(): Promise<Record<string, string>> {
    return this.context.client.hgetall(this.context.keys.flow(this.id, 'ignored'));
  }

  /** BullMQ's older name of getIgnoredChildrenFailures. */
  getFailedChildrenValues(): Promise<Record<string, string>> {
    return this.getIgnoredChildrenFailures();
  }

  /** A parent's children: processed (with values), unprocessed, failed and ignored. */
  getDependencies(): Promise<Dependencies> {
    return dependencies(this.context.client, this.context.keys, this.id);
  }

  /** How many of a parent's children are processed, unprocessed, failed and ignored. */
  getDependenciesCount(): Promise<DependenciesCount> {
    return dependenciesCount(this.context.client, this.context.keys, this.id);
  }

  /** Resolves with the result when the job completes, rejects with its failedReason when it fails. */
  waitUntilFinished(queueEvents: QueueEvents, timeoutMs?: number): Promise<Result> {
    return waitUntilFinished<Result>(queueEvents, this.context, this.id, timeoutMs);
  }

  toJSON(): Record<string, unknown> {
    const { context: _context, ...rest } = this;
    return { ...rest, queueName: this.queueName };
  }
}

function pairsToRecord(flat: string[]): Record<string, string> {
  const record: Record<string, string> = {};
  for (let i = 0; i < flat.length; i += 2) record[flat[i]] = flat[i + 1];
  return record;
}

function parseField<T>(id: string, fields: Record<string, string>, name: string): T | undefined {
  try {
    return fromJson<T>(fields[name]);
  } catch {
    throw new CorruptJobError(id, `field "${name}" is not valid JSON`);
  }
}
