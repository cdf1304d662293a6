import { randomUUID as uuid } from 'node:crypto';
import { EchoMQError } from '../../protocol/errors.js';
import type { Scripts } from '../../protocol/scripts.js';
import type { Finish } from '../../protocol/script-shapes.js';
import type { ParentPolicy } from '../../protocol/flow-scripts.js';
import { HandoverRecovery } from './handover-recovery.js';
import type { Job } from '../job/job.js';
import { CorruptJobError } from '../job/job-errors.js';
import type { JobContext } from '../job/job-context.js';
import type { WorkerLocks } from '../locks/worker-locks.js';
import { LockLostError } from '../locks/lock-lost-error.js';
import type { JobLock } from '../locks/tracked-job.js';
import { keepRule } from '../core/job-options.js';
import type { BackoffStrategy } from './worker-options.js';
import { toJson } from '../core/serialize.js';
import { isRateLimitError } from '../core/rate-limit-error.js';
import { isUnrecoverableError, UnrecoverableError } from '../core/unrecoverable-error.js';
import { JobCancelledError } from '../core/job-cancelled-error.js';
import { decideRetry } from './retry-decision.js';
import type { AttemptSpan } from './attempt-spans.js';
import { LANDED_EARLIER, ReleaseSender, type Release } from './release-sender.js';
import type { RunMarks } from './run-marks.js';
import type { ActiveJob, FlowFinishing, JobRunnerOptions, RunnerEvents } from './job-runner-options.js';

const STACKTRACE_LIMIT = 10;
/** The keep rule of a retried job's finish: it keeps its hash (the retry's delay travels apart). */
const NO_REMOVAL: [number, number] = [-1, 0];

/**
 * The end of a run: from what the handler gave (a result or an error) to its release landed in
 * Redis. A completion or a failure goes by moveToFinished-14 (with fetch-next when asked; batched
 * with the worker's other finishes by its FinishBatcher), a retry by a finish whose target is
 * "retried" (retryJob-12 for a job of a flow), a RateLimitError by moveJobFromActiveToWait-11.
 * While it is in flight the lock keeps being renewed; a release that fails for want of a
 * connection is sent again until it lands or the lock is known lost (ReleaseSender).
 */
export class JobRelease {
  private readonly handovers: HandoverRecovery;
  /** Sends the finishes, retries and give-backs, and judges a reply lost with its connection. */
  private readonly releases: ReleaseSender;
  private readonly scripts: Scripts;
  private readonly context: JobContext;
  private readonly lockDuration: number;
  private readonly finisher: JobRunnerOptions['finisher'];
  private readonly events: RunnerEvents;
  private readonly backoffStrategy?: BackoffStrategy;
  private readonly flows?: FlowFinishing;
  private readonly trims?: JobRunnerOptions['trims'];

  /** `marks`: the runner's, which say which runs are flow jobs' and parents'. */
  constructor(options: JobRunnerOptions, locks: WorkerLocks, private readonly marks: RunMarks) {
    ({
      scripts: this.scripts, context: this.context, lockDuration: this.lockDuration, finisher: this.finisher, events: this.events,
      backoffStrategy: this.backoffStrategy, flows: this.flows, trims: this.trims,
    } = options);
    this.handovers = new HandoverRecovery(this.context.client, this.context.keys);
    this.releases = new ReleaseSender(this.context, locks, (error) => this.events.error(error));
  }

  /** Releases a run that ended: completed, failed, retried or given back; the next job when fetch-next took one. */
  async settle(
    job: Job, lock: JobLock, result: unknown, failure: Error | undefined, fetchNext: () => boolean, attempt: AttemptSpan | undefined,
  ): Promise<ActiveJob | undefined> {
    try {
      return await this.release(job, lock, result, failure, fetchNext, attempt);
    } catch (error) {
      return this.releaseFailed(job, lock, error, attempt);
    }
  }

  private async release(
    job: Job, lock: JobLock, result: unknown, failure: Error | undefined, fetchNext: () => boolean, attempt: AttemptSpan | undefined,
  ): Promise<ActiveJob | undefined> {
    if (!failure && this.marks.isParent(lock)) {
      // A parent does not complete once a child failed with failParentOnFailure while it ran.
      const childFailed = await this.context.client.hget(this.context.keys.job(job.id), 'cfr');
      if (childFailed !== null) failure = new UnrecoverableError(childFailed);
    }
    if (!failure) {
      let returnvalue: string;
      try {
        returnvalue = toJson(result ?? null, 'returnvalue');
      } catch (error) {
        return this.fail(job, lock, error as Error, fetchNext, attempt);
      }
      const next = await this.finish(job, lock, 'completed', returnvalue, '', keepRule(job.opts.removeOnComplete), job.attemptsMade + 1, fetchNext);
      job.returnvalue = result;
      job.attemptsMade++;
      lock.release('completed');
      attempt?.end('completed');
      this.freeDeduplication(job);
      this.events.completed(job, result);
      return next;
    }
    return this.fail(job, lock, failure, fetchNext, attempt);
  }

  private async fail(job: Job, lock: JobLock, error: Error, fetchNext: () => boolean, attempt: AttemptSpan | undefined): Promise<ActiveJob | undefined> {
    if (isRateLimitError(error)) {
      await this.requeue(job, lock);
      attempt?.end('requeued');
      return undefined;
    }
    const token = lock.token;
    const attemptsMade = job.attemptsMade + 1;
    const stacktrace = JSON.stringify([...job.stacktrace, error.stack ?? String(error)].slice(-STACKTRACE_LIMIT));
    let reason = error.message || String(error);
    const retry = attemptsMade < (job.opts.attempts ?? 1) && !isUnrecoverableError(error) && !(error instanceof CorruptJobError)
      && !(error instanceof JobCancelledError) && !job.discarded;
    job.failedReason = reason;
    job.attemptsMade = attemptsMade;
    // When to retry (or not after all): the error's retryAfter, the job's backoff or the worker's strategy.
    const decision = retry ? await decideRetry(job, error, attemptsMade, this.backoffStrategy) : undefined;
    if (decision?.retry) {
      const delay = decision.delay;
      let next: ActiveJob | undefined;
      if (this.isFlowJob(lock)) {
        // A job of a flow retries alone (retryJob-12): finishFlowJobs-15 takes no retry.
        const release: Release = { outcome: 'retried', attemptsMade, mayRemove: false };
        await this.releases.send(job, lock, () => this.scripts.retryJob({ jobId: job.id, token, timestamp: Date.now(), delay, failedReason: reason, stacktrace }), release);
      } else {
        // With the turn's finishes (finishJobs-13), taking its next job like them.
        next = await this.finish(job, lock, 'retried', reason, stacktrace, NO_REMOVAL, attemptsMade, fetchNext, delay);
      }
      // A partitioned queue's workers hear of the job back in wait (or of its due time) on its
      // partition's wake channel; a plain queue's, by the marker the retry set.
      this.context.wake?.();
      lock.release('retried');
      attempt?.end('retried', error);
      this.events.failed(job, error, true);
      return next;
    }
    if (decision?.refusal) job.failedReason = reason = `${reason} (not retried: ${decision.refusal})`;
    const next = await this.finish(job, lock, 'failed', reason, stacktrace, keepRule(job.opts.removeOnFail), attemptsMade, fetchNext);
    lock.release('failed');
    attempt?.end('failed', error);
    this.freeDeduplication(job);
    this.events.failed(job, error, false);
    return next;
  }

  /**
   * A job held ahead (prefetch) that had not started when the worker began to close: back to wait,
   * taken next, its attempt not counted (moveJobFromActiveToWait-11, lock checked, as for a
   * RateLimitError). If that does not land, its lock lapses and the stalled sweep gives it back.
   */
  async giveBack(job: Job, lock: JobLock, attempt: AttemptSpan | undefined): Promise<undefined> {
    lock.beginRelease();
    try {
      await this.requeue(job, lock);
      attempt?.end('requeued');
      return undefined;
    } catch (error) {
      return this.releaseFailed(job, lock, error, attempt);
    }
  }

  /**
   * The handler threw RateLimitError: the job goes back to wait, next in line, its attempt not
   * counted (atm unchanged, no failedReason, no 'failed' event). No fetch-next: the queue is limited.
   */
  private async requeue(job: Job, lock: JobLock): Promise<undefined> {
    const release: Release = { outcome: 'requeued', attemptsMade: job.attemptsMade, mayRemove: false };
    await this.releases.send(job, lock, () => this.scripts.moveJobFromActiveToWait(job.id, lock.token), release);
    this.context.wake?.();
    lock.release('requeued');
    return undefined;
  }

  /**
   * A simple-mode deduplication id (no ttl) is free once its job has finished, and every add reads
   * it so; its key is deleted here only so it does not stay until an add of that id reuses it:
   * moveToFinished-14 is fixed and cannot. Not awaited, and a failure is ignored: it costs a call
   * per such job and nothing else, and nothing depends on it (docs/deduplication.md).
   */
  private freeDeduplication(job: Job): void {
    if (job.deduplicationId === undefined || job.opts.deduplication?.ttl !== undefined) return;
    this.scripts.freeDeduplication(job.deduplicationId, job.id).catch(() => undefined);
  }

  /**
   * moveToFinished-14 (or its batch form; finishFlowJobs-15 for a job of a flow, whose notice then
   * goes to its parent); with fetch-next, the job it took comes back with its
   * fresh token. Every send of one finish carries the same fetch-next token, so when a lost reply
   * had handed a job over, that job is found by its lock and taken back (HandoverRecovery).
   */
  private async finish(
    job: Job, lock: JobLock, outcome: Finish['outcome'], value: string, stacktrace: string,
    [keepCount, keepAgeMs]: [number, number], attemptsMade: number, fetchNext: () => boolean, retryDelayMs = 0,
  ): Promise<ActiveJob | undefined> {
    const token = uuid();
    const firstSentAt = Date.now();
    let acquiredAt = firstSentAt;
    let askedForNext = false;
    const release: Release = { outcome, attemptsMade, mayRemove: outcome !== 'retried' && (keepCount >= 0 || keepAgeMs > 0) };
    const flowJob = this.isFlowJob(lock);
    const pickup = await this.releases.send(job, lock, () => {
      acquiredAt = Date.now();
      const next = fetchNext() ? { token, lockDuration: this.lockDuration } : undefined;
      askedForNext ||= next !== undefined;
      const finish = { jobId: job.id, token: lock.token, timestamp: acquiredAt, outcome, value, stacktrace, keepCount, keepAgeMs, retryDelayMs, next };
      return flowJob ? this.finisher.finishFlow(finish) : this.finisher.finish(finish);
    }, release);
    if (outcome !== 'retried') this.trims?.note(outcome, keepCount, keepAgeMs);
    // The notice is in Redis once the finish landed. After a lost reply it is delivered as Redis
    // holds it: "landed" may also be a job removed meanwhile, whose notice is another finish's.
    if (flowJob && job.parentKey !== undefined && outcome !== 'retried') {
      if (pickup === LANDED_EARLIER) this.flows?.notices.sendStored(job.id);
      else this.flows?.notices.send({ childId: job.id, parentKey: job.parentKey, outcome, value, policy: noticePolicy(this.marks.policyOf(lock), outcome, keepCount) });
    }
    if (pickup === LANDED_EARLIER) {
      if (!askedForNext) return undefined;
      // The lock was set by one of the sends: the first one's time is the oldest it can be.
      const handedOver = await this.handovers.reclaim(token);
      return handedOver ? { id: handedOver.id, fields: handedOver.fields, token, acquiredAt: firstSentAt } : undefined;
    }
    return pickup.job ? { id: pickup.job.id, fields: pickup.job.fields, token, acquiredAt } : undefined;
  }
  /** The release did not land (a lock found lost, or Redis gone past the retries): the job is not this worker's any more. */
  releaseFailed(job: Job, lock: JobLock, error: unknown, attempt: AttemptSpan | undefined): undefined {
    const lost = error instanceof EchoMQError || error instanceof LockLostError;
    lock.release('lost');
    attempt?.end(lost ? 'lost' : 'error', error);
    if (lost) this.events.lockLost(job, error as Error);
    else this.events.error(error as Error);
    return undefined;
  }

  /** The run of a job of a flow, on a worker that runs flows: it finishes by finishFlowJobs-15 and retries alone. */
  private isFlowJob(lock: JobLock): boolean {
    return this.flows !== undefined && this.marks.isFlowJob(lock);
  }
}

/**
 * The policy a child's notice carries, as the finish wrote it (lua-src/includes/flowParent.lua,
 * noticePolicy): its own, but "remove" for a child that failed with none and was removed at its
 * finish, which is no failure of its parent's. The notice sent must match the stored one, which
 * ackNotices-2 deletes only while it says the same.
 */
function noticePolicy(policy: ParentPolicy, outcome: Finish['outcome'], keepCount: number): ParentPolicy {
  return policy === '' && outcome === 'failed' && keepCount === 0 ? 'remove' : policy;
}
