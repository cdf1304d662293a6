import { v4 as uuid } from 'uuid';
import { EchoMQError } from '../protocol/errors.js';
import type { Finish, Pickup, Scripts } from '../protocol/scripts.js';
import type { FinishBatcher } from './finish-batcher.js';
import { CorruptJobError, Job, type JobContext } from './job.js';
import { LockLostError, type JobLock, type WorkerLocks } from './worker-locks.js';
import { backoffDelay, keepRule } from './options.js';
import { toJson } from './serialize.js';
import { UnrecoverableError } from './unrecoverable-error.js';

/** What a processor gets besides the job. */
export interface ProcessorContext {
  /** The lock token of this ownership of the job. */
  token: string;
  /** Aborted when the lock is lost (reason: LockLostError) or the worker closes without waiting. */
  signal: AbortSignal;
}

export type ProcessorFunction<Data = unknown, Result = unknown> = (job: Job<Data, Result>, context: ProcessorContext) => Promise<Result> | Result;

/** A job just taken into active, with the token that holds its lock. */
export interface ActiveJob {
  id: string;
  fields: string[];
  token: string;
  /** When the pickup that set the lock was sent (the lock is at least this fresh). */
  acquiredAt?: number;
}

/** What the runner reports to its worker. */
export interface RunnerEvents {
  active(job: Job): void;
  completed(job: Job, result: unknown): void;
  failed(job: Job, error: Error, willRetry: boolean): void;
  lockLost(job: Job, error: Error): void;
  error(error: Error): void;
}

const STACKTRACE_LIMIT = 10;
const FINISH_RETRY_MS = [100, 200, 500, 1000, 2000];
/** What a finish answers when an earlier try had landed: its reply, and any job it took, are gone. */
const LANDED_EARLIER: Pickup = { job: undefined, nextDelayedAt: 0, rateLimitedFor: 0 };

/**
 * Runs one job from pickup to release: the processor, then moveToFinished-14 (with fetch-next when
 * asked; batched with the worker's other finishes by its FinishBatcher) or retryJob-12. While the
 * finish is in flight the lock keeps being renewed; a finish that fails for want of a connection
 * is sent again until it lands or the lock is known lost.
 */
export class JobRunner {
  constructor(
    private readonly processor: ProcessorFunction,
    private readonly scripts: Scripts,
    private readonly context: JobContext,
    private readonly locks: WorkerLocks,
    private readonly lockDuration: number,
    private readonly finisher: Pick<FinishBatcher, 'finish'>,
    private readonly events: RunnerEvents,
  ) {}

  /** Runs the job; returns the next job when fetch-next (`fetchNext()` true at finish) took one. */
  async run(active: ActiveJob, fetchNext: () => boolean): Promise<ActiveJob | undefined> {
    let job: Job;
    let corrupt: Error | undefined;
    try {
      job = Job.fromHash(this.context, active.id, active.fields);
    } catch (error) {
      corrupt = error as Error;
      job = new Job(this.context, active.id, '', undefined, {}, 0);
    }
    const lock = this.locks.track(active.id, active.token, job.attemptsStarted, active.acquiredAt);
    this.events.active(job);

    let result: unknown;
    let failure: Error | undefined = corrupt;
    if (!failure) {
      try {
        // An own getter (not a prototype one), so { ...context } still carries the signal; the
        // AbortController behind it is made only if the handler reads it.
        result = await this.processor(job, { token: active.token, get signal() { return lock.signal; } });
      } catch (error) {
        failure = error instanceof Error ? error : new Error(String(error));
      }
    }

    if (!lock.held || lock.abortReason) {
      // The heartbeat found the lock gone, or the worker closed without waiting (close(true)):
      // either way this worker gave the job up, and its lock is left to lapse for another one.
      this.events.lockLost(job, lock.abortReason ?? new Error(`the worker stopped renewing the lock of job ${job.id}`));
      return undefined;
    }
    lock.beginRelease();
    try {
      return await this.settle(job, lock, result, failure, fetchNext);
    } catch (error) {
      const lost = error instanceof EchoMQError || error instanceof LockLostError;
      lock.release('lost');
      if (lost) this.events.lockLost(job, error as Error);
      else this.events.error(error as Error);
      return undefined;
    }
  }

  private async settle(job: Job, lock: JobLock, result: unknown, failure: Error | undefined, fetchNext: () => boolean): Promise<ActiveJob | undefined> {
    if (!failure) {
      let returnvalue: string;
      try {
        returnvalue = toJson(result ?? null, 'returnvalue');
      } catch (error) {
        return this.fail(job, lock, error as Error, fetchNext);
      }
      const next = await this.finish(job, lock, 'completed', returnvalue, '', keepRule(job.opts.removeOnComplete), fetchNext);
      job.returnvalue = result;
      job.attemptsMade++;
      lock.release('completed');
      this.events.completed(job, result);
      return next;
    }
    return this.fail(job, lock, failure, fetchNext);
  }

  private async fail(job: Job, lock: JobLock, error: Error, fetchNext: () => boolean): Promise<ActiveJob | undefined> {
    const token = lock.token;
    const attemptsMade = job.attemptsMade + 1;
    const stacktrace = JSON.stringify([...job.stacktrace, error.stack ?? String(error)].slice(-STACKTRACE_LIMIT));
    const reason = error.message || String(error);
    const retry = attemptsMade < (job.opts.attempts ?? 1) && !(error instanceof UnrecoverableError) && !(error instanceof CorruptJobError);
    job.failedReason = reason;
    job.attemptsMade = attemptsMade;
    if (retry) {
      const delay = backoffDelay(job.opts.backoff, attemptsMade);
      await this.withRetries(job, lock, () => this.scripts.retryJob({ jobId: job.id, token, timestamp: Date.now(), delay, failedReason: reason, stacktrace }), 'retried');
      lock.release('retried');
      this.events.failed(job, error, true);
      return undefined;
    }
    const next = await this.finish(job, lock, 'failed', reason, stacktrace, keepRule(job.opts.removeOnFail), fetchNext);
    lock.release('failed');
    this.events.failed(job, error, false);
    return next;
  }

  /** moveToFinished-14 (or its batch form); with fetch-next, the job it took comes back with its fresh token. */
  private async finish(
    job: Job, lock: JobLock, outcome: Finish['outcome'], value: string, stacktrace: string,
    [keepCount, keepAgeMs]: [number, number], fetchNext: () => boolean,
  ): Promise<ActiveJob | undefined> {
    const token = uuid();
    let acquiredAt = Date.now();
    const pickup: Pickup = await this.withRetries(job, lock, () => {
      acquiredAt = Date.now();
      const next = fetchNext() ? { token, lockDuration: this.lockDuration } : undefined;
      return this.finisher.finish({ jobId: job.id, token: lock.token, timestamp: acquiredAt, outcome, value, stacktrace, keepCount, keepAgeMs, next });
    }, outcome);
    return pickup.job ? { id: pickup.job.id, fields: pickup.job.fields, token, acquiredAt } : undefined;
  }

  /**
   * Sends a finishing script until Redis answers. When an earlier try may have landed (its reply
   * was lost with the connection), a -1/-2/-3 answer is checked against where the job is now.
   */
  private async withRetries<T>(job: Job, lock: JobLock, send: () => Promise<T>, outcome: string): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await send();
      } catch (error) {
        if (error instanceof EchoMQError) {
          if (attempt > 0 && (await this.landedEarlier(job, outcome))) return LANDED_EARLIER as T;
          throw error;
        }
        // A renewal that found no lock while this finish was in flight may have seen the finish's
        // own DEL (the reply was lost, not the finish): ask where the job is before calling it lost.
        const lost = lock.lostCode;
        if (lost !== undefined) {
          if (await this.landedEarlier(job, outcome)) return LANDED_EARLIER as T;
          throw new LockLostError(this.context.queueName, job.id, lost);
        }
        if (this.locks.isClosed || attempt >= FINISH_RETRY_MS.length * 4) throw error;
        this.events.error(error as Error);
        await new Promise((resolve) => setTimeout(resolve, FINISH_RETRY_MS[Math.min(attempt, FINISH_RETRY_MS.length - 1)]));
      }
    }
  }

  private async landedEarlier(job: Job, outcome: string): Promise<boolean> {
    // ats is the fencing number: if it moved on, another pickup owns what we see, not our finish.
    const ats = await this.context.client.hget(this.context.keys.job(job.id), 'ats');
    if (ats !== null && Number(ats) !== job.attemptsStarted) return false;
    const state = await job.getState();
    if (outcome === 'retried') return state === 'wait' || state === 'delayed' || state === 'prioritized' || state === 'paused';
    return state === outcome || state === 'unknown';
  }
}
