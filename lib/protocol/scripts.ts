import { EchoMQError } from './errors.js';
import { isErrorCode } from './codes.js';
import type { JobState, Keys } from './keys.js';
import { runPipelined, Script, type RedisClient, type ScriptCall } from './script.js';
import { type ScriptArg } from './script-command.js';

/** Jobs per addJobs-9 call: large enough to amortise a script call, small enough to keep one short. */
export const ADD_BATCH = 500;

/** Every script of `lua/`, one instance each for the process: read and hashed once. */
export const SCRIPTS = {
  addJob: new Script('addJob', 9),
  addJobs: new Script('addJobs', 9),
  addJobsDedup: new Script('addJobsDedup', 9),
  getDeduplicationJobId: new Script('getDeduplicationJobId', 1),
  freeDeduplication: new Script('freeDeduplication', 1),
  moveToActive: new Script('moveToActive', 11),
  moveToActiveBounded: new Script('moveToActiveBounded', 11),
  moveToFinished: new Script('moveToFinished', 14),
  finishJobs: new Script('finishJobs', 13),
  finishJobsBounded: new Script('finishJobsBounded', 13),
  moveJobFromActiveToWait: new Script('moveJobFromActiveToWait', 11),
  retryJob: new Script('retryJob', 12),
  extendLock: new Script('extendLock', 2),
  extendLocks: new Script('extendLocks', 1),
  moveStalledJobsToWait: new Script('moveStalledJobsToWait', 8),
  pause: new Script('pause', 6),
  updateProgress: new Script('updateProgress', 2),
  addLog: new Script('addLog', 2),
  removeJob: new Script('removeJob', 14),
  reprocessJob: new Script('reprocessJob', 9),
  cleanJobsInSet: new Script('cleanJobsInSet', 2),
  drain: new Script('drain', 5),
  obliterate: new Script('obliterate', 2),
  upsertJobScheduler: new Script('upsertJobScheduler', 10),
  startSchedulerJob: new Script('startSchedulerJob', 14),
  repairJobScheduler: new Script('repairJobScheduler', 12),
  removeJobScheduler: new Script('removeJobScheduler', 7),
  // Job control (bindings in job-control-scripts.ts).
  updateData: new Script('updateData', 1),
  changeDelay: new Script('changeDelay', 4),
  changePriority: new Script('changePriority', 8),
  promote: new Script('promote', 9),
  moveToDelayed: new Script('moveToDelayed', 7),
  retryJobs: new Script('retryJobs', 8),
  promoteJobs: new Script('promoteJobs', 8),
  // Cancels (queue.cancelJob; docs/protocol.md, "Cancelling jobs").
  cancelJob: new Script('cancelJob', 9),
  cancelledAmong: new Script('cancelledAmong', 1),
  // Flows (bindings in flow-scripts.ts; docs/protocol.md, "Flows").
  addFlowJobs: new Script('addFlowJobs', 15),
  ackNotices: new Script('ackNotices', 2),
  ackFlowPending: new Script('ackFlowPending', 2),
  finishFlowJob: new Script('finishFlowJob', 8),
  finishFlowJobs: new Script('finishFlowJobs', 15),
  settleChildren: new Script('settleChildren', 12),
  addDependency: new Script('addDependency', 4),
  moveToWaitingChildren: new Script('moveToWaitingChildren', 7),
  // Metrics of workers with `metrics` (bindings in metrics.ts; docs/protocol.md, "Metrics").
  recordMetrics: new Script('recordMetrics', 2),
} as const;

export type ScriptName = keyof typeof SCRIPTS;

/**
 * The eleven pickup KEYS that moveToActive-11, moveToFinished-14 and finishJobs-13 open with, in
 * their fixed order: the one place the TypeScript side lists them. `lua-src/includes/pickupKeys.lua`
 * reads them in the same order (a test compares the two).
 */
export const PICKUP_KEYS = [
  'wait', 'active', 'prioritized', 'events', 'stalled', 'limiter', 'delayed', 'paused', 'meta', 'pc', 'marker',
] as const satisfies ReadonlyArray<keyof Keys>;

/** What a pickup (moveToActive-11, or fetch-next in moveToFinished-14) answered. */
export interface Pickup {
  /** The job taken into active, or undefined when none was. */
  job?: { id: string; fields: string[] };
  /** When the next delayed job is due (ms timestamp), or 0. */
  nextDelayedAt: number;
  /** How long the rate limiter holds pickups back (ms), or 0. */
  rateLimitedFor: number;
  /** True when moveToActiveBounded-11 took nothing because active held maxActive jobs. */
  atBound?: boolean;
}

export interface RateLimit {
  max: number;
  duration: number;
}

export interface NewJob {
  customId?: string;
  name: string;
  data: string;
  opts: string;
  timestamp: number;
  delay: number;
  priority: number;
  lifo: boolean;
  /** Set only for an add with deduplication (docs/deduplication.md); a plain add's call is as it always was. */
  deduplication?: NewJobDeduplication;
}

/** A job's deduplication as the add scripts take it: ttl 0 = none (simple mode). */
export interface NewJobDeduplication {
  id: string;
  ttl: number;
  extend: boolean;
  replace: boolean;
}

/**
 * What an add answered: `created` when the job was added; otherwise `jobId` is the job already
 * there: the one of that custom id, or (`deduplicated`) the one that holds the deduplication id.
 */
export interface AddedJob {
  jobId: string;
  created: boolean;
  /** Present (true) only when the add was dropped by deduplication. */
  deduplicated?: true;
}

export interface Finish {
  jobId: string;
  token: string;
  timestamp: number;
  /**
   * 'retried': a failed attempt with attempts left, back to ready (or delayed by `retryDelayMs`)
   * as retryJob-12 would, with fetch-next; finishJobs-13 and finishJobsBounded-13 only (never
   * moveToFinished-14, which is fixed, nor finishFlowJobs-15).
   */
  outcome: 'completed' | 'failed' | 'retried';
  /** The returnvalue JSON when completed, the failedReason when failed or retried. */
  value: string;
  stacktrace: string;
  keepCount: number;
  keepAgeMs: number;
  /** When retried: its delay in ms from `timestamp` (0 or absent: back to ready now). */
  retryDelayMs?: number;
  /** Set to take the next job in the same call. */
  next?: { token: string; lockDuration: number };
}

/** What removeJob-14 is asked besides the job. */
export interface RemoveJobCall {
  /** Answer the job's unsettled children (a parent's), for the runtime to remove. */
  children: boolean;
  /** Leave a notice for the job's parent (false when the parent is being removed too). */
  notifyParent: boolean;
  /**
   * Remove the job only while it is this parent's child (its job key): for a caller that read it
   * as a child earlier. A job re-parented since answers 'reparented' and stays.
   */
  expectedParent?: string;
}

/** removeJob-14's answer. */
export interface RemovedJob {
  outcome: 'removed' | 'locked' | 'missing' | 'reparented';
  /** A removed child's notice for its parent (JSON [parentKey, outcome, value, policy]), now in its queue. */
  notice?: string;
  /** A removed parent's unsettled children (job keys), when asked. */
  children: string[];
}

export interface Retry {
  jobId: string;
  token: string;
  timestamp: number;
  delay: number;
  failedReason: string;
  stacktrace: string;
}

export interface SweepResult {
  movedToWait: Array<{ jobId: string; stalledCount: number }>;
  movedToFailed: Array<{ jobId: string; stalledCount: number }>;
}

/** A failure reported by extendLocks-1. */
export interface LockFailure {
  jobId: string;
  code: -2 | -6;
}

/**
 * Scripts: the typed bindings of one queue's scripts. Each method builds its KEYS array in exactly
 * one place, from `Keys`, and turns a negative code into an `EchoMQError`. It knows keys, scripts
 * and codes only: it sends no other command and hands out neither its connection nor its keys.
 * A worker's own settings (the lock duration, the rate limit) are arguments of the calls that use
 * them; `maxEvents`, the bound of the queue's events stream that every script writing an event
 * trims to, is the one value fixed per instance.
 */
export class Scripts {
  /** PICKUP_KEYS of this queue, built once: every pickup and finish sends them. */
  private readonly pickupKeyNames: string[];

  constructor(
    private readonly client: RedisClient,
    private readonly keys: Keys,
    private readonly maxEvents: number,
    /** Put before automatic job ids: "" for a plain queue, `<i>-` for partition i (lib/protocol/partitions.ts). */
    private readonly idPrefix = '',
  ) {
    this.pickupKeyNames = PICKUP_KEYS.map((name) => keys[name]);
  }

  /**
   * Adds a job; `created` is false when the custom id already existed or (`deduplicated`) the
   * deduplication id is held: then nothing was written but the `deduplicated` event.
   */
  async addJob(job: NewJob): Promise<AddedJob> {
    const reply = await this.call({ script: SCRIPTS.addJob, keys: this.addKeys(), args: this.addJobArgs(job) });
    const [jobId, outcome] = reply as [string, number];
    return addedJob(jobId, outcome);
  }

  /**
   * addJob-9's ARGV. ARGV[11] (the automatic id prefix) and ARGV[12..15] (deduplication) are
   * optional: an add without deduplication on a plain queue sends what it always sent.
   */
  private addJobArgs(job: NewJob): ScriptArg[] {
    const args: ScriptArg[] = [this.keys.base, job.customId ?? '', job.name, job.data, job.opts, job.timestamp, job.delay,
      job.priority, job.lifo ? '1' : '0', this.maxEvents];
    const dedup = job.deduplication;
    if (dedup) args.push(this.idPrefix, dedup.id, dedup.ttl, dedup.extend ? '1' : '0', dedup.replace ? '1' : '0');
    else if (this.idPrefix !== '') args.push(this.idPrefix);
    return args;
  }

  /**
   * Adds many jobs in one round trip: one call per ADD_BATCH jobs, all pipelined. A batch without
   * a deduplicated job goes as addJobs-9, one with any as addJobsDedup-9 (its fields for every job).
   * Results in order; an Error in place of each job of a batch that failed.
   */
  async addJobs(jobs: NewJob[]): Promise<Array<AddedJob | Error>> {
    const calls: ScriptCall[] = [];
    for (let i = 0; i < jobs.length; i += ADD_BATCH) calls.push(this.addJobsCall(jobs.slice(i, i + ADD_BATCH)));
    const replies = await runPipelined(this.client, calls);
    const results: Array<AddedJob | Error> = [];
    replies.forEach(([error, reply], batch) => {
      const size = Math.min(ADD_BATCH, jobs.length - batch * ADD_BATCH);
      if (error) {
        for (let j = 0; j < size; j++) results.push(error);
        return;
      }
      const flat = reply as Array<string | number>;
      for (let j = 0; j < flat.length; j += 2) results.push(addedJob(flat[j], flat[j + 1] as number));
    });
    return results;
  }

  /** The call of one batch of at most ADD_BATCH jobs. */
  private addJobsCall(batch: NewJob[]): ScriptCall {
    const k = this.keys;
    if (!batch.some((job) => job.deduplication)) {
      // The id prefix is optional (addJobs-9 tells by the ARGV count): a plain queue's call is as it always was.
      const args: ScriptArg[] = this.idPrefix === '' ? [k.base, this.maxEvents] : [k.base, this.maxEvents, this.idPrefix];
      for (const job of batch) {
        args.push(job.customId ?? '', job.name, job.data, job.opts, job.timestamp, job.delay, job.priority, job.lifo ? '1' : '0');
      }
      return { script: SCRIPTS.addJobs, keys: this.addKeys(), args };
    }
    const args: ScriptArg[] = [k.base, this.maxEvents, this.idPrefix];
    for (const job of batch) {
      const dedup = job.deduplication;
      args.push(job.customId ?? '', job.name, job.data, job.opts, job.timestamp, job.delay, job.priority, job.lifo ? '1' : '0',
        dedup?.id ?? '', dedup?.ttl ?? 0, dedup?.extend ? '1' : '0', dedup?.replace ? '1' : '0');
    }
    return { script: SCRIPTS.addJobsDedup, keys: this.addKeys(), args };
  }

  /** The job that holds a deduplication id (by the rule every add applies), or null when it is free. */
  async getDeduplicationJobId(deduplicationId: string): Promise<string | null> {
    const reply = await this.call({
      script: SCRIPTS.getDeduplicationJobId,
      keys: [this.keys.deduplication(deduplicationId)],
      args: [this.keys.base, deduplicationId],
    });
    return reply === null ? null : String(reply);
  }

  /** Deletes a simple-mode deduplication key still naming `jobId`, which has finished; true when it did. */
  async freeDeduplication(deduplicationId: string, jobId: string): Promise<boolean> {
    const reply = await this.call({ script: SCRIPTS.freeDeduplication, keys: [this.keys.deduplication(deduplicationId)], args: [jobId] });
    return reply === 1;
  }

  /** Takes the next ready job into active under `token`; `limit` is the worker's rate limit, if any. */
  async moveToActive(token: string, lockDuration: number, timestamp: number, limit?: RateLimit, maxActive = Infinity): Promise<Pickup> {
    const args: ScriptArg[] = [this.keys.base, token, lockDuration, timestamp, this.maxEvents, limit?.max ?? 0, limit?.duration ?? 0];
    // Bounded (a partitioned queue's partitionConcurrency): the same pickup behind a check of active's length.
    const bounded = Number.isFinite(maxActive);
    if (bounded) args.push(maxActive);
    const reply = await this.call({ script: bounded ? SCRIPTS.moveToActiveBounded : SCRIPTS.moveToActive, keys: this.pickupKeys(), args });
    return pickupOf(reply);
  }

  /** Finishes a job; returns the next job's pickup when `finish.next` asked for one. */
  async moveToFinished(finish: Finish, limit?: RateLimit): Promise<Pickup> {
    const k = this.keys;
    if (finish.outcome === 'retried') throw new Error(`EchoMQ: moveToFinished-14 takes no retry (job ${finish.jobId}): send it by finishJobs`);
    const reply = await this.call({
      script: SCRIPTS.moveToFinished,
      keys: [...this.pickupKeys(), k.state(finish.outcome), k.job(finish.jobId), k.lock(finish.jobId)],
      args: [finish.jobId, finish.token, finish.timestamp, finish.outcome, finish.value, finish.stacktrace,
        finish.keepCount, finish.keepAgeMs, finish.next ? '1' : '0', k.base, finish.next?.token ?? '',
        finish.next?.lockDuration ?? 0, this.maxEvents, limit?.max ?? 0, limit?.duration ?? 0],
    });
    this.throwIfCode(reply, finish.jobId, SCRIPTS.moveToFinished);
    return pickupOf(reply);
  }

  /**
   * Finishes several jobs in one call (finishJobs-13, the batch form of moveToFinished-14). One
   * result per finish, in order: the Pickup its fetch-next took (`finish.next`), or the EchoMQError
   * that refused it (that job is left as it was; the others are not affected). With a finite
   * `maxActive` (a queue-wide concurrency) it is finishJobsBounded-13: fetch-next leaves active
   * holding at most maxActive jobs, and a slot left free with ready work behind it sets the marker.
   */
  async finishJobs(finishes: Finish[], pickupTimestamp: number, lockDuration: number, limit?: RateLimit, maxActive = Infinity): Promise<Array<Pickup | EchoMQError>> {
    const k = this.keys;
    const bounded = Number.isFinite(maxActive);
    const script = bounded ? SCRIPTS.finishJobsBounded : SCRIPTS.finishJobs;
    const args: ScriptArg[] = [k.base, pickupTimestamp, this.maxEvents, lockDuration, limit?.max ?? 0, limit?.duration ?? 0];
    if (bounded) args.push(maxActive);
    for (const f of finishes) {
      // A retry's delay travels in the keep count's place (finishJobs-13's header).
      const keepCountOrDelay = f.outcome === 'retried' ? f.retryDelayMs ?? 0 : f.keepCount;
      args.push(f.jobId, f.token, f.outcome, f.value, f.stacktrace, keepCountOrDelay, f.keepAgeMs, f.next?.token ?? '', f.timestamp);
    }
    const reply = await this.call({ script, keys: [...this.pickupKeys(), k.completed, k.failed], args });
    return batchPickups(reply, finishes, script);
  }

  /**
   * Finishes several jobs of flows in one call (finishFlowJobs-15, the batch form of
   * finishFlowJob-8, with fetch-next): as finishJobs (a finite `maxActive` bounds the fetch-nexts
   * as finishJobsBounded-13 does), and each job that finished and has a parent left its notice in
   * this queue, for ParentNotices to deliver.
   */
  async finishFlowJobs(finishes: Finish[], pickupTimestamp: number, lockDuration: number, limit?: RateLimit, maxActive = Infinity): Promise<Array<Pickup | EchoMQError>> {
    const k = this.keys;
    const script = SCRIPTS.finishFlowJobs;
    const args: ScriptArg[] = [k.base, pickupTimestamp, this.maxEvents, lockDuration, limit?.max ?? 0, limit?.duration ?? 0,
      Number.isFinite(maxActive) ? maxActive : ''];
    for (const f of finishes) {
      if (f.outcome === 'retried') throw new Error(`EchoMQ: finishFlowJobs-15 takes no retry (job ${f.jobId}): send it by retryJob-12`);
      args.push(f.jobId, f.token, f.outcome, f.value, f.stacktrace, f.keepCount, f.keepAgeMs, f.next?.token ?? '', f.timestamp);
    }
    const reply = await this.call({ script, keys: [...this.pickupKeys(), k.completed, k.failed, k.notices, k.noticeData], args });
    return batchPickups(reply, finishes, script);
  }

  async retryJob(retry: Retry): Promise<void> {
    const k = this.keys;
    const reply = await this.call({
      script: SCRIPTS.retryJob,
      keys: [k.active, k.wait, k.paused, k.meta, k.prioritized, k.pc, k.marker, k.delayed, k.events,
        k.stalled, k.job(retry.jobId), k.lock(retry.jobId)],
      args: [retry.jobId, retry.token, retry.timestamp, retry.delay, retry.failedReason, retry.stacktrace, this.maxEvents],
    });
    this.throwIfCode(reply, retry.jobId, SCRIPTS.retryJob);
  }

  /**
   * Gives a job back because the queue is rate limited (its handler threw RateLimitError): the lock
   * is checked and released and the job goes back to ready, next in line, without using an attempt.
   */
  async moveJobFromActiveToWait(jobId: string, token: string): Promise<void> {
    const k = this.keys;
    const reply = await this.call({
      script: SCRIPTS.moveJobFromActiveToWait,
      keys: [k.active, k.wait, k.paused, k.meta, k.prioritized, k.pc, k.marker, k.events, k.stalled, k.job(jobId), k.lock(jobId)],
      args: [jobId, token, this.maxEvents],
    });
    this.throwIfCode(reply, jobId, SCRIPTS.moveJobFromActiveToWait);
  }

  /** The seed's single-job heartbeat: true when renewed, false when the token no longer holds the lock. */
  async extendLock(jobId: string, token: string, duration: number): Promise<boolean> {
    const reply = await this.call({
      script: SCRIPTS.extendLock,
      keys: [this.keys.lock(jobId), this.keys.stalled],
      args: [token, duration, jobId],
    });
    return reply === 1;
  }

  /** One extendLock-2 call (reply 1: renewed); the LockManager's second look at a lock extendLocks-1 found missing. */
  extendLockCall(jobId: string, token: string, duration: number): ScriptCall {
    return { script: SCRIPTS.extendLock, keys: [this.keys.lock(jobId), this.keys.stalled], args: [token, duration, jobId] };
  }

  /** One extendLocks-1 call for `pairs` (jobId, token); used by the LockManager's pipelined tick. */
  extendLocksCall(pairs: Array<[string, string]>, duration: number): ScriptCall {
    const args: ScriptArg[] = [this.keys.base, duration];
    for (const [jobId, token] of pairs) args.push(jobId, token);
    return { script: SCRIPTS.extendLocks, keys: [this.keys.stalled], args };
  }

  /**
   * One cancelledAmong-1 call: which of `jobIds` (at most a renewal chunk) queue.cancelJob marked.
   * Its reply is read by parseCancelled.
   */
  cancelledAmongCall(jobIds: string[]): ScriptCall {
    return { script: SCRIPTS.cancelledAmong, keys: [this.keys.meta], args: [this.keys.base, ...jobIds] };
  }

  async moveStalledJobsToWait(maxStalledCount: number, timestamp: number, stalledInterval: number): Promise<SweepResult> {
    const k = this.keys;
    const reply = (await this.call({
      script: SCRIPTS.moveStalledJobsToWait,
      keys: [k.stalled, k.wait, k.active, k.failed, k.stalledCheck, k.meta, k.paused, k.events],
      args: [maxStalledCount, k.base, timestamp, stalledInterval, this.maxEvents],
    })) as [string[], string[]];
    return { movedToWait: pairsOf(reply[0]), movedToFailed: pairsOf(reply[1]) };
  }

  /** Pauses or resumes; true when the state changed. */
  async pause(action: 'pause' | 'resume'): Promise<boolean> {
    const k = this.keys;
    const reply = await this.call({
      script: SCRIPTS.pause,
      keys: [k.wait, k.paused, k.meta, k.prioritized, k.marker, k.events],
      args: [action, this.maxEvents],
    });
    return reply === 1;
  }

  async updateProgress(jobId: string, progress: string): Promise<void> {
    const reply = await this.call({
      script: SCRIPTS.updateProgress,
      keys: [this.keys.job(jobId), this.keys.events],
      args: [jobId, progress, this.maxEvents],
    });
    this.throwIfCode(reply, jobId, SCRIPTS.updateProgress);
  }

  /** Appends a log line; returns how many lines the job keeps. */
  async addLog(jobId: string, line: string, keep: number): Promise<number> {
    const reply = await this.call({
      script: SCRIPTS.addLog,
      keys: [this.keys.job(jobId), this.keys.logs(jobId)],
      args: [line, keep],
    });
    this.throwIfCode(reply, jobId, SCRIPTS.addLog);
    return reply as number;
  }

  /**
   * Removes a job with its flow keys (removeJob-14): 'removed', 'locked' (a worker holds it;
   * nothing changed), 'reparented' (`expectedParent` given and not its parent: nothing changed)
   * or 'missing'. A removed child of a flow answers the notice for its parent now
   * in this queue (to deliver); a removed parent, with `children`, its unsettled children's keys.
   */
  async removeJob(jobId: string, opts: RemoveJobCall = { children: false, notifyParent: true }): Promise<RemovedJob> {
    const k = this.keys;
    const reply = await this.call({
      script: SCRIPTS.removeJob,
      keys: [k.wait, k.paused, k.active, k.prioritized, k.delayed, k.completed, k.failed, k.stalled, k.events, k.job(jobId),
        k.waitingChildren, k.flowPending, k.notices, k.noticeData],
      args: [jobId, this.maxEvents, opts.children ? '1' : '0', opts.notifyParent ? '1' : '0', Date.now(), opts.expectedParent ?? ''],
    }) as [number, string?, ...string[]];
    const [code, notice, ...children] = reply;
    if (code === 0) return { outcome: 'locked', children: [] };
    if (code === 2) return { outcome: 'reparented', children: [] };
    if (code !== 1) return { outcome: 'missing', children: [] };
    return { outcome: 'removed', notice: notice === '' ? undefined : notice, children };
  }

  async reprocessJob(jobId: string, from: 'failed' | 'completed'): Promise<void> {
    const k = this.keys;
    const reply = await this.call({
      script: SCRIPTS.reprocessJob,
      keys: [k.job(jobId), k.state(from), k.wait, k.paused, k.meta, k.prioritized, k.pc, k.marker, k.events],
      args: [jobId, this.maxEvents],
    });
    this.throwIfCode(reply, jobId, SCRIPTS.reprocessJob, `it is not in ${from}`);
  }

  /**
   * One window of a clean (cleanJobsInSet-2): up to `limit` (0 = any number) of the jobs of
   * `state` at or before `cutoff`, among the ids from rank `fromRank` on. Returns the removed ids
   * and the rank the next window starts at, or -1 at the end of the state.
   */
  async cleanJobsInSet(state: JobState, cutoff: number, limit: number, fromRank = 0): Promise<{ removed: string[]; nextRank: number }> {
    const [removed, nextRank] = (await this.call({
      script: SCRIPTS.cleanJobsInSet,
      keys: [this.keys.state(state), this.keys.events],
      args: [this.keys.base, cutoff, limit, this.maxEvents, fromRank],
    })) as [string[], number];
    return { removed, nextRank };
  }

  /** One drain batch; returns how many jobs are left to remove. */
  async drain(withDelayed: boolean): Promise<number> {
    const k = this.keys;
    return (await this.call({
      script: SCRIPTS.drain,
      keys: [k.wait, k.paused, k.prioritized, k.delayed, k.events],
      args: [k.base, withDelayed ? '1' : '0', this.maxEvents],
    })) as number;
  }

  /** One obliterate batch: 1 done, 0 more to do, -3 refused because jobs are active. */
  async obliterate(force: boolean): Promise<number> {
    return (await this.call({
      script: SCRIPTS.obliterate,
      keys: [this.keys.meta, this.keys.active],
      args: [this.keys.base, force ? '1' : '0'],
    })) as number;
  }

  private addKeys(): string[] {
    const k = this.keys;
    return [k.wait, k.paused, k.meta, k.id, k.delayed, k.prioritized, k.pc, k.marker, k.events];
  }

  private pickupKeys(): string[] {
    return this.pickupKeyNames;
  }

  private call(call: ScriptCall): Promise<unknown> {
    return call.script.run(this.client, call.keys, call.args);
  }

  private throwIfCode(reply: unknown, jobId: string, script: Script, context?: string): void {
    if (isErrorCode(reply)) throw new EchoMQError(reply, jobId, script.fileName, reply === -3 ? context : undefined);
  }
}


/** An add script's answer for one job: outcome 1 added, 0 the custom id existed, 2 deduplicated. */
function addedJob(jobId: string | number, outcome: number): AddedJob {
  const added: AddedJob = { jobId: String(jobId), created: outcome === 1 };
  if (outcome === 2) added.deduplicated = true;
  return added;
}

/** A batch finish's next job hash: the flat array as a JSON string (finishBatch.lua), or `{}` (no job). */
function fieldsOf(reply: string | number | string[]): string[] {
  return typeof reply === 'string' ? JSON.parse(reply) as string[] : reply as string[];
}

/**
 * A batch finish's reply (finishJobs-13, finishFlowJobs-15: a flat code, jobId, fields triple per
 * finish, then nextDelayedAt and rateLimitedFor): one Pickup or EchoMQError per finish, in order.
 */
function batchPickups(reply: unknown, finishes: Finish[], script: Script): Array<Pickup | EchoMQError> {
  const [results, nextDelayedAt, rateLimitedFor] = reply as [Array<string | number | string[]>, number, number];
  const pickups = finishes.map((f, i) => {
    const code = results[3 * i] as number;
    if (isErrorCode(code)) return new EchoMQError(code, f.jobId, script.fileName);
    return parsePickup([results[3 * i + 1], fieldsOf(results[3 * i + 2]), nextDelayedAt, rateLimitedFor]);
  });
  emptyReply(reply as unknown[]);
  return pickups;
}

/**
 * Empties a reply array once what it carried was taken out of it. Measured, not guessed
 * (bench/profile-echomq.mjs --few-kb --promoted): a reply array left whole is kept alive past
 * its use from below us (ioredis alone, without EchoMQ, shows the same; the holder is not the
 * Command nor its promise), and with it every job's data it carried, which V8 then promotes to
 * the old generation for the major GC to collect: at concurrency 50 with 3.5 KB of data, 2.1 KB
 * promoted a job left whole, 0.3 KB emptied. The pickups keep their own fields arrays.
 */
function emptyReply(reply: unknown[]): void {
  reply.length = 0;
}

/** A pickup script's reply (moveToActive-11, moveToFinished-14) as a Pickup, the reply emptied. */
function pickupOf(reply: unknown): Pickup {
  const pickup = parsePickup(reply);
  emptyReply(reply as unknown[]);
  return pickup;
}

export function parsePickup(reply: unknown): Pickup {
  const [jobId, fields, nextDelayedAt, rateLimitedFor, atBound] = reply as [string | number, string[], number, number, number?];
  const pickup: Pickup = {
    job: jobId === 0 ? undefined : { id: String(jobId), fields },
    nextDelayedAt: Number(nextDelayedAt),
    rateLimitedFor: Number(rateLimitedFor),
  };
  if (atBound === 1) pickup.atBound = true;
  return pickup;
}

/** A job cancelledAmong-1 found marked: the cancel's reason, undefined when it gave none. */
export interface MarkedCancel {
  jobId: string;
  reason?: string;
}

/** Parses cancelledAmong-1's flat jobId, reason array. */
export function parseCancelled(reply: unknown): MarkedCancel[] {
  const flat = reply as Array<string | number>;
  const marked: MarkedCancel[] = [];
  for (let i = 0; i < flat.length; i += 2) {
    const reason = String(flat[i + 1]);
    marked.push(reason === '' ? { jobId: String(flat[i]) } : { jobId: String(flat[i]), reason });
  }
  return marked;
}

/** Parses extendLocks-1's flat failure array. */
export function parseLockFailures(reply: unknown): LockFailure[] {
  const flat = reply as Array<string | number>;
  const failures: LockFailure[] = [];
  for (let i = 0; i < flat.length; i += 2) failures.push({ jobId: String(flat[i]), code: Number(flat[i + 1]) as -2 | -6 });
  return failures;
}

function pairsOf(flat: Array<string | number>): Array<{ jobId: string; stalledCount: number }> {
  const pairs: Array<{ jobId: string; stalledCount: number }> = [];
  for (let i = 0; i < flat.length; i += 2) pairs.push({ jobId: String(flat[i]), stalledCount: Number(flat[i + 1]) });
  return pairs;
}
