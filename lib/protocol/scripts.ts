import { EchoMQError } from './errors.js';
import { isErrorCode } from './codes.js';
import type { Keys } from './keys.js';
import { runPipelined, type RedisClient, type Script, type ScriptCall } from './script.js';
import type { ScriptArg } from './script-command.js';
import { ADD_BATCH, SCRIPTS } from './script-registry.js';
import { addedJob, batchPickups, pairsOf, pickupOf } from './script-replies.js';
import {
  PICKUP_KEYS, type AddedJob, type Finish, type NewJob, type Pickup, type RateLimit, type Retry, type SweepResult,
} from './script-shapes.js';

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
