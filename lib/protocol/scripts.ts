import { EchoMQError } from './errors.js';
import { isErrorCode } from './codes.js';
import type { JobState, Keys } from './keys.js';
import { runPipelined, Script, type RedisClient, type ScriptArg, type ScriptCall } from './script.js';

/** Jobs per addJobs-9 call: large enough to amortise a script call, small enough to keep one short. */
export const ADD_BATCH = 500;

/** Every script of `lua/`, one instance each for the process: read and hashed once. */
export const SCRIPTS = {
  addJob: new Script('addJob', 9),
  addJobs: new Script('addJobs', 9),
  moveToActive: new Script('moveToActive', 11),
  moveToActiveBounded: new Script('moveToActiveBounded', 11),
  moveToFinished: new Script('moveToFinished', 14),
  finishJobs: new Script('finishJobs', 13),
  retryJob: new Script('retryJob', 12),
  extendLock: new Script('extendLock', 2),
  extendLocks: new Script('extendLocks', 1),
  moveStalledJobsToWait: new Script('moveStalledJobsToWait', 8),
  pause: new Script('pause', 6),
  updateProgress: new Script('updateProgress', 2),
  addLog: new Script('addLog', 2),
  removeJob: new Script('removeJob', 10),
  reprocessJob: new Script('reprocessJob', 9),
  cleanJobsInSet: new Script('cleanJobsInSet', 2),
  drain: new Script('drain', 5),
  obliterate: new Script('obliterate', 2),
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
}

export interface Finish {
  jobId: string;
  token: string;
  timestamp: number;
  outcome: 'completed' | 'failed';
  /** The returnvalue JSON when completed, the failedReason when failed. */
  value: string;
  stacktrace: string;
  keepCount: number;
  keepAgeMs: number;
  /** Set to take the next job in the same call. */
  next?: { token: string; lockDuration: number };
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

  /** Adds a job; `created` is false when the custom id already existed (nothing was written). */
  async addJob(job: NewJob): Promise<{ jobId: string; created: boolean }> {
    const k = this.keys;
    const args: ScriptArg[] = [k.base, job.customId ?? '', job.name, job.data, job.opts, job.timestamp, job.delay,
      job.priority, job.lifo ? '1' : '0', this.maxEvents];
    // ARGV[11] is optional: a plain queue's add sends what it always sent.
    if (this.idPrefix !== '') args.push(this.idPrefix);
    const reply = await this.call({ script: SCRIPTS.addJob, keys: this.addKeys(), args });
    const [jobId, created] = reply as [string, number];
    return { jobId: String(jobId), created: created === 1 };
  }

  /**
   * Adds many jobs in one round trip: one addJobs-9 call per ADD_BATCH jobs, all pipelined.
   * Results in order; an Error in place of each job of a batch that failed.
   */
  async addJobs(jobs: NewJob[]): Promise<Array<{ jobId: string; created: boolean } | Error>> {
    const k = this.keys;
    const calls: ScriptCall[] = [];
    for (let i = 0; i < jobs.length; i += ADD_BATCH) {
      const batch = jobs.slice(i, i + ADD_BATCH);
      // The id prefix is optional (addJobs-9 tells by the ARGV count): a plain queue's call is as it always was.
      const args: ScriptArg[] = this.idPrefix === '' ? [k.base, this.maxEvents] : [k.base, this.maxEvents, this.idPrefix];
      for (const job of batch) {
        args.push(job.customId ?? '', job.name, job.data, job.opts, job.timestamp, job.delay, job.priority, job.lifo ? '1' : '0');
      }
      calls.push({ script: SCRIPTS.addJobs, keys: this.addKeys(), args });
    }
    const replies = await runPipelined(this.client, calls);
    const results: Array<{ jobId: string; created: boolean } | Error> = [];
    replies.forEach(([error, reply], batch) => {
      const size = Math.min(ADD_BATCH, jobs.length - batch * ADD_BATCH);
      if (error) {
        for (let j = 0; j < size; j++) results.push(error);
        return;
      }
      const flat = reply as Array<string | number>;
      for (let j = 0; j < flat.length; j += 2) results.push({ jobId: String(flat[j]), created: flat[j + 1] === 1 });
    });
    return results;
  }

  /** Takes the next ready job into active under `token`; `limit` is the worker's rate limit, if any. */
  async moveToActive(token: string, lockDuration: number, timestamp: number, limit?: RateLimit, maxActive = Infinity): Promise<Pickup> {
    const args: ScriptArg[] = [this.keys.base, token, lockDuration, timestamp, this.maxEvents, limit?.max ?? 0, limit?.duration ?? 0];
    // Bounded (a partitioned queue's partitionConcurrency): the same pickup behind a check of active's length.
    const bounded = Number.isFinite(maxActive);
    if (bounded) args.push(maxActive);
    const reply = await this.call({ script: bounded ? SCRIPTS.moveToActiveBounded : SCRIPTS.moveToActive, keys: this.pickupKeys(), args });
    return parsePickup(reply);
  }

  /** Finishes a job; returns the next job's pickup when `finish.next` asked for one. */
  async moveToFinished(finish: Finish, limit?: RateLimit): Promise<Pickup> {
    const k = this.keys;
    const reply = await this.call({
      script: SCRIPTS.moveToFinished,
      keys: [...this.pickupKeys(), k.state(finish.outcome), k.job(finish.jobId), k.lock(finish.jobId)],
      args: [finish.jobId, finish.token, finish.timestamp, finish.outcome, finish.value, finish.stacktrace,
        finish.keepCount, finish.keepAgeMs, finish.next ? '1' : '0', k.base, finish.next?.token ?? '',
        finish.next?.lockDuration ?? 0, this.maxEvents, limit?.max ?? 0, limit?.duration ?? 0],
    });
    this.throwIfCode(reply, finish.jobId, SCRIPTS.moveToFinished);
    return parsePickup(reply);
  }

  /**
   * Finishes several jobs in one call (finishJobs-13, the batch form of moveToFinished-14). One
   * result per finish, in order: the Pickup its fetch-next took (`finish.next`), or the EchoMQError
   * that refused it (that job is left as it was; the others are not affected).
   */
  async finishJobs(finishes: Finish[], pickupTimestamp: number, lockDuration: number, limit?: RateLimit): Promise<Array<Pickup | EchoMQError>> {
    const k = this.keys;
    const args: ScriptArg[] = [k.base, pickupTimestamp, this.maxEvents, lockDuration, limit?.max ?? 0, limit?.duration ?? 0];
    for (const f of finishes) {
      args.push(f.jobId, f.token, f.outcome, f.value, f.stacktrace, f.keepCount, f.keepAgeMs, f.next?.token ?? '', f.timestamp);
    }
    const reply = await this.call({ script: SCRIPTS.finishJobs, keys: [...this.pickupKeys(), k.completed, k.failed], args });
    const [results, nextDelayedAt, rateLimitedFor] = reply as [Array<string | number | string[]>, number, number];
    return finishes.map((f, i) => {
      const code = results[3 * i] as number;
      if (isErrorCode(code)) return new EchoMQError(code, f.jobId, SCRIPTS.finishJobs.fileName);
      return parsePickup([results[3 * i + 1], results[3 * i + 2], nextDelayedAt, rateLimitedFor]);
    });
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

  /** Removes a job: 'removed', 'locked' (a worker holds it; nothing changed) or 'missing'. */
  async removeJob(jobId: string): Promise<'removed' | 'locked' | 'missing'> {
    const k = this.keys;
    const reply = await this.call({
      script: SCRIPTS.removeJob,
      keys: [k.wait, k.paused, k.active, k.prioritized, k.delayed, k.completed, k.failed, k.stalled, k.events, k.job(jobId)],
      args: [jobId, this.maxEvents],
    });
    return reply === 1 ? 'removed' : reply === 0 ? 'locked' : 'missing';
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
