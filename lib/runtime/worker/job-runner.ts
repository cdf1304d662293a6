import { v4 as uuid } from 'uuid';
import { EchoMQError } from '../../protocol/errors.js';
import type { Finish, Scripts } from '../../protocol/scripts.js';
import type { FinishBatcher } from './finish-batcher.js';
import { HandoverRecovery } from './handover-recovery.js';
import { CorruptJobError, Job, type JobContext } from '../queue/job.js';
import { LockLostError, type JobLock, type WorkerLocks } from '../locks/worker-locks.js';
import { backoffDelay, keepRule } from '../options.js';
import { toJson } from '../queue/serialize.js';
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
  /** The job's hash: HGETALL's flat array (as the scripts return it) or its object form. */
  fields: string[] | Record<string, string>;
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
/** What a finishing call answers when an earlier send of it had landed and its reply was lost. */
const LANDED_EARLIER = Symbol('landed earlier');

/** What a finishing script is asked to do, as far as judging a lost reply needs it. */
interface Release {
  outcome: 'completed' | 'failed' | 'retried';
  /** The job's `atm` once this release lands: the release is the only writer of atm while we hold the lock. */
  attemptsMade: number;
  /** The finish may delete the job (removeOnComplete / removeOnFail with a count or an age). */
  mayRemove: boolean;
}

/**
 * Runs one job from pickup to release: the processor, then moveToFinished-14 (with fetch-next when
 * asked; batched with the worker's other finishes by its FinishBatcher) or retryJob-12. While the
 * finish is in flight the lock keeps being renewed; a finish that fails for want of a connection
 * is sent again until it lands or the lock is known lost.
 */
export class JobRunner {
  private readonly handovers: HandoverRecovery;

  constructor(
    private readonly processor: ProcessorFunction,
    private readonly scripts: Scripts,
    private readonly context: JobContext,
    private readonly locks: WorkerLocks,
    private readonly lockDuration: number,
    private readonly finisher: Pick<FinishBatcher, 'finish'>,
    private readonly events: RunnerEvents,
  ) {
    this.handovers = new HandoverRecovery(context.client, context.keys);
  }

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
      const next = await this.finish(job, lock, 'completed', returnvalue, '', keepRule(job.opts.removeOnComplete), job.attemptsMade + 1, fetchNext);
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
      const release: Release = { outcome: 'retried', attemptsMade, mayRemove: false };
      await this.withRetries(job, lock, () => this.scripts.retryJob({ jobId: job.id, token, timestamp: Date.now(), delay, failedReason: reason, stacktrace }), release);
      // A partitioned queue's workers hear of the job back in wait (or of its due time) on its
      // partition's wake channel; a plain queue's, by the marker retryJob-12 set.
      this.context.wake?.();
      lock.release('retried');
      this.events.failed(job, error, true);
      return undefined;
    }
    const next = await this.finish(job, lock, 'failed', reason, stacktrace, keepRule(job.opts.removeOnFail), attemptsMade, fetchNext);
    lock.release('failed');
    this.events.failed(job, error, false);
    return next;
  }

  /**
   * moveToFinished-14 (or its batch form); with fetch-next, the job it took comes back with its
   * fresh token. Every send of one finish carries the same fetch-next token, so when a lost reply
   * had handed a job over, that job is found by its lock and taken back (HandoverRecovery).
   */
  private async finish(
    job: Job, lock: JobLock, outcome: Finish['outcome'], value: string, stacktrace: string,
    [keepCount, keepAgeMs]: [number, number], attemptsMade: number, fetchNext: () => boolean,
  ): Promise<ActiveJob | undefined> {
    const token = uuid();
    const firstSentAt = Date.now();
    let acquiredAt = firstSentAt;
    let askedForNext = false;
    const release: Release = { outcome, attemptsMade, mayRemove: keepCount >= 0 || keepAgeMs > 0 };
    const pickup = await this.withRetries(job, lock, () => {
      acquiredAt = Date.now();
      const next = fetchNext() ? { token, lockDuration: this.lockDuration } : undefined;
      askedForNext ||= next !== undefined;
      return this.finisher.finish({ jobId: job.id, token: lock.token, timestamp: acquiredAt, outcome, value, stacktrace, keepCount, keepAgeMs, next });
    }, release);
    if (pickup === LANDED_EARLIER) {
      if (!askedForNext) return undefined;
      // The lock was set by one of the sends: the first one's time is the oldest it can be.
      const handedOver = await this.handovers.reclaim(token);
      return handedOver ? { id: handedOver.id, fields: handedOver.fields, token, acquiredAt: firstSentAt } : undefined;
    }
    return pickup.job ? { id: pickup.job.id, fields: pickup.job.fields, token, acquiredAt } : undefined;
  }

  /**
   * Sends a finishing script until Redis answers. An answer of -1, -2 or -3 may be this very call
   * landing twice: the connection dropped with the reply, and ioredis (or this loop) sent it again.
   * Any try can be such a resend, so each of those answers is checked against what Redis holds.
   */
  private async withRetries<T>(job: Job, lock: JobLock, send: () => Promise<T>, release: Release): Promise<T | typeof LANDED_EARLIER> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await send();
      } catch (error) {
        // A -1/-2/-3 answer, or a renewal that found no lock while this finish was in flight, may be
        // this very call having landed (its reply lost): ask Redis before calling the job lost.
        // When Redis cannot be asked now (the connection is still down), the send is tried again.
        const lost = error instanceof EchoMQError ? error.code : lock.lostCode;
        if (lost !== undefined) {
          const landed = lost === -6 ? false : await this.landedEarlier(job, release).catch(() => undefined);
          if (landed === true) return LANDED_EARLIER;
          if (landed === false) throw error instanceof EchoMQError ? error : new LockLostError(this.context.queueName, job.id, lost as -2 | -6);
        }
        if (this.locks.isClosed || attempt >= FINISH_RETRY_MS.length * 4) throw error;
        this.events.error(error as Error);
        await new Promise((resolve) => setTimeout(resolve, FINISH_RETRY_MS[Math.min(attempt, FINISH_RETRY_MS.length - 1)]));
      }
    }
  }

  /**
   * Did an earlier send of this release land? Not judged by where the job is: a stalled sweep
   * also puts a job back in wait, as a landed retry does. `ats` (the fencing number) unchanged
   * says no pickup came since ours, and then only our release can have moved `atm` to the value
   * it writes. A job whose hash is gone landed only if this release could delete it.
   */
  private async landedEarlier(job: Job, release: Release): Promise<boolean> {
    const [ats, atm] = await this.context.client.hmget(this.context.keys.job(job.id), 'ats', 'atm');
    if (ats === null) return release.mayRemove && release.outcome !== 'retried';
    return Number(ats) === job.attemptsStarted && Number(atm ?? 0) === release.attemptsMade;
  }
}
