import { randomUUID as uuid } from 'node:crypto';
import { EchoMQError } from '../../protocol/errors.js';
import type { Scripts } from '../../protocol/scripts.js';
import type { Finish } from '../../protocol/script-shapes.js';
import { HandoverRecovery } from './handover-recovery.js';
import { Job } from '../job/job.js';
import { CorruptJobError } from '../job/job-errors.js';
import type { JobContext, RunOwnership } from '../job/job-context.js';
import type { ProcessorFunction } from '../queue/processor.js';
import { isDelayedError } from '../core/delayed-error.js';
import { isWaitingChildrenError } from '../core/waiting-children-error.js';
import type { WorkerLocks } from '../locks/worker-locks.js';
import { LockLostError } from '../locks/lock-lost-error.js';
import type { JobLock } from '../locks/tracked-job.js';
import { keepRule } from '../core/job-options.js';
import type { BackoffStrategy } from './worker-options.js';
import { toJson } from '../core/serialize.js';
import { RateLimitError } from '../core/rate-limit-error.js';
import { UnrecoverableError } from '../core/unrecoverable-error.js';
import { JobTimeoutError } from '../core/job-timeout-error.js';
import { JobCancelledError } from '../core/job-cancelled-error.js';
import { CANCEL_MARK_FIELD } from '../../protocol/cancels.js';
import { decideRetry } from './retry-decision.js';
import type { SchedulerChain } from '../schedulers/scheduler-chain.js';
import type { AttemptSpan, AttemptSpans } from './attempt-spans.js';
import type { RunSlots } from './run-slots.js';
import { LANDED_EARLIER, ReleaseSender, type Release } from './release-sender.js';
import { fieldOf, flowLinkOf, type PickupFields } from './pickup-fields.js';
import { HandlerContext } from './handler-context.js';
import { RunMarks } from './run-marks.js';
import type { FlowFinishing, JobRunnerOptions, RunnerEvents } from './job-runner-options.js';

/** A job just taken into active, with the token that holds its lock. */
export interface ActiveJob {
  id: string;
  /** The job's hash: HGETALL's flat array (as the scripts return it) or its object form. */
  fields: PickupFields;
  token: string;
  /** When the pickup that set the lock was sent (the lock is at least this fresh). */
  acquiredAt?: number;
}

const STACKTRACE_LIMIT = 10;
/** The keep rule of a retried job's finish: it keeps its hash (the retry's delay travels apart). */
const NO_REMOVAL: [number, number] = [-1, 0];
/**
 * Runs one job from pickup to release: the processor, then moveToFinished-14 (with fetch-next when
 * asked; batched with the worker's other finishes by its FinishBatcher), a retry (a finish whose
 * target is "retried", in the same batches; retryJob-12 for a job of a flow), or
 * moveJobFromActiveToWait-11 when the processor threw RateLimitError. While the
 * finish is in flight the lock keeps being renewed; a finish that fails for want of a connection
 * is sent again until it lands or the lock is known lost.
 */
export class JobRunner {
  private readonly handovers: HandoverRecovery;
  /** Sends the finishes, retries and give-backs, and judges a reply lost with its connection. */
  private readonly releases: ReleaseSender;
  /** Which runs were moved away by their handler, which are flow jobs' and parents' (run-marks.ts). */
  private readonly marks = new RunMarks();

  private readonly processor: ProcessorFunction;
  private readonly scripts: Scripts;
  private readonly context: JobContext;
  private readonly locks: WorkerLocks;
  private readonly lockDuration: number;
  private readonly finisher: JobRunnerOptions['finisher'];
  private readonly events: RunnerEvents;
  private readonly schedulers?: JobRunnerOptions['schedulers'];
  private readonly backoffStrategy?: BackoffStrategy;
  private readonly jobTimeout?: number;
  private readonly flows?: FlowFinishing;
  private readonly spans?: AttemptSpans;
  private readonly slots?: RunSlots;

  constructor(options: JobRunnerOptions) {
    ({
      processor: this.processor, scripts: this.scripts, context: this.context, locks: this.locks, lockDuration: this.lockDuration,
      finisher: this.finisher, events: this.events, schedulers: this.schedulers, backoffStrategy: this.backoffStrategy,
      jobTimeout: this.jobTimeout, flows: this.flows, spans: this.spans, slots: this.slots,
    } = options);
    const { context, locks } = options;
    this.handovers = new HandoverRecovery(context.client, context.keys);
    this.releases = new ReleaseSender(context, locks, (error) => this.events.error(error));
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
    const attempt = this.spans?.begin(job, lock);
    // From the raw fields: a corrupt child still finishes by finishFlowJob-8, whose notice its parent needs.
    const flowLink = flowLinkOf(active.fields);
    if (flowLink) this.marks.flowJob(lock, flowLink.policy, flowLink.parent);
    // Cancelled by queue.cancelJob before this pickup (the pickup's fields carry the mark): the run
    // is cut short before it starts, and fails as cancelled below without its handler.
    const mark = corrupt ? undefined : fieldOf(active.fields, CANCEL_MARK_FIELD);
    if (mark !== undefined) this.locks.cancel(active.id, mark === '' ? undefined : mark, 'queue');
    if (job.repeatJobKey !== undefined && this.schedulers && !corrupt && !lock.interruption) {
      const started = await this.startScheduled(job, lock, active, attempt);
      if (!started) return undefined;
    }
    // A parent a child failed with failParentOnFailure while it was not waiting (cfr): it fails
    // now, for good, without its handler.
    let failure: Error | undefined = corrupt ?? (flowLink?.childFailed !== undefined ? new UnrecoverableError(flowLink.childFailed) : undefined);
    // Prefetch: a job held ahead starts once a handler ended (one failing without its handler does
    // not wait); the worker's close gives it back unstarted.
    const slot = this.slots && !failure ? await this.slots.take(lock) : undefined;
    if (slot === 'closing') return this.giveBack(job, lock, attempt);
    // A job that waited for its slot may have been cancelled, or lost its lock, meanwhile: it does
    // not start then, and emits no 'active'.
    const startable = slot === undefined || (slot === 'slot' && lock.held && !lock.abortReason);
    if (startable) this.events.active(job);

    let result: unknown;
    if (!failure && !lock.interruption && startable) {
      const timeout = job.opts.timeout ?? this.jobTimeout;
      // A timer only for a job with a timeout: the others pay nothing for the feature.
      const timer = timeout === undefined ? undefined : setTimeout(() => lock.interrupt(new JobTimeoutError(job.id, timeout)), timeout);
      try {
        // The AbortController behind its signal is made only if the handler reads it.
        const context = new HandlerContext(active.token, lock);
        const work = attempt ? attempt.within(() => this.processor(job, context)) : this.processor(job, context);
        // race(): a timeout or a cancel fails the job without waiting for the handler.
        result = await lock.race(Promise.resolve(work));
      } catch (error) {
        failure = error instanceof Error ? error : new Error(String(error));
      } finally {
        if (timer) clearTimeout(timer);
      }
    }
    // The handler ended (or never started): a slot taken goes to the next job held ahead.
    if (slot === 'slot') this.slots?.give();

    const movedTo = this.marks.movedTo(lock);
    if (movedTo) {
      attempt?.end(movedTo);
      return this.afterOwnMove(job, movedTo, failure);
    }
    if (isDelayedError(failure)) failure = delayedWithoutMove(job, failure as Error);
    if (isWaitingChildrenError(failure)) failure = waitingWithoutMove(job, failure as Error);
    if (!lock.held || lock.abortReason) {
      // The heartbeat found the lock gone, or the worker closed without waiting (close(true)):
      // either way this worker gave the job up, and its lock is left to lapse for another one.
      const reason = lock.abortReason ?? new Error(`the worker stopped renewing the lock of job ${job.id}`);
      attempt?.end('lost', reason);
      this.events.lockLost(job, reason);
      return undefined;
    }
    if (lock.interruption) {
      // Timed out or cancelled, the lock still held: the run fails with that reason, whatever the
      // handler gave (it may have settled in the same turn as the interruption).
      failure = lock.interruption;
      result = undefined;
    }
    lock.beginRelease();
    try {
      return await this.settle(job, lock, result, failure, fetchNext, attempt);
    } catch (error) {
      return this.releaseFailed(job, lock, error, attempt);
    }
  }

  /** The release did not land (a lock found lost, or Redis gone past the retries): the job is not this worker's any more. */
  private releaseFailed(job: Job, lock: JobLock, error: unknown, attempt: AttemptSpan | undefined): undefined {
    const lost = error instanceof EchoMQError || error instanceof LockLostError;
    lock.release('lost');
    attempt?.end(lost ? 'lost' : 'error', error);
    if (lost) this.events.lockLost(job, error as Error);
    else this.events.error(error as Error);
    return undefined;
  }

  /**
   * A job scheduler's job: the step before its handler (SchedulerChain.start). False when the job
   * does not run: skipped (a later slot's job stands for its slot), or not this worker's any more,
   * or the step could not be sent: then the lock is left to lapse and the stalled sweep gives the
   * job back, to run once its step lands.
   */
  private async startScheduled(job: Job, lock: JobLock, active: ActiveJob, attempt: AttemptSpan | undefined): Promise<boolean> {
    try {
      const verdict = await (this.schedulers as Pick<SchedulerChain, 'start'>).start(job.id, active.token, fieldOf(active.fields, 'rpt'));
      if (verdict === 'run') return true;
      lock.release('skipped');
      attempt?.end('skipped');
      return false;
    } catch (error) {
      lock.release('lost');
      attempt?.end('lost', error);
      this.events.lockLost(job, error as Error);
      return false;
    }
  }

  /** A child was added to a job (running-parents.ts): when this runner runs it, the run is a parent's. */
  markParent(jobKey: string): void {
    const { keys } = this.context;
    if (!jobKey.startsWith(keys.base)) return;
    // Every lock this runner tracks is one of its runs (a job held ahead by prefetch included);
    // one whose settle already read `parents` is not changed by the mark.
    const lock = this.locks.lockOf(jobKey.slice(keys.base.length));
    if (lock) this.marks.becomeParent(lock);
  }

  /** The run of a job this runner holds under `token` (JobContext.ownRun; RunMarks.ownership). */
  ownRun(jobId: string, token: string): RunOwnership | undefined {
    const lock = this.locks.lockOf(jobId);
    return lock && lock.token === token ? this.marks.ownership(lock, token) : undefined;
  }

  /** The run of a job of a flow, on a worker that runs flows: it finishes by finishFlowJobs-15 and retries alone. */
  private isFlowJob(lock: JobLock): boolean {
    return this.flows !== undefined && this.marks.isFlowJob(lock);
  }

  /**
   * The handler moved its job to delayed or waiting-children: the job is not this worker's any more, and it neither
   * completes nor fails. A handler that went on to return (or to throw something else) loses its
   * result; the worker says so on 'error'.
   */
  private afterOwnMove(job: Job, to: 'delayed' | 'waiting-children', failure: Error | undefined): undefined {
    const expected = to === 'delayed' ? isDelayedError(failure) : isWaitingChildrenError(failure);
    if (!expected) {
      const ending = failure ? `threw "${failure.message}"` : 'returned';
      const wanted = to === 'delayed' ? 'DelayedError' : 'WaitingChildrenError';
      this.events.error(new Error(`job ${job.id} was moved to ${to} by its handler, which then ${ending} instead of throwing ${wanted}: the job stays in ${to}, and this run's outcome is dropped`));
    }
    return undefined;
  }

  private async settle(
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
    if (error instanceof RateLimitError) {
      await this.requeue(job, lock);
      attempt?.end('requeued');
      return undefined;
    }
    const token = lock.token;
    const attemptsMade = job.attemptsMade + 1;
    const stacktrace = JSON.stringify([...job.stacktrace, error.stack ?? String(error)].slice(-STACKTRACE_LIMIT));
    let reason = error.message || String(error);
    const retry = attemptsMade < (job.opts.attempts ?? 1) && !(error instanceof UnrecoverableError) && !(error instanceof CorruptJobError)
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
  private async giveBack(job: Job, lock: JobLock, attempt: AttemptSpan | undefined): Promise<undefined> {
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
    // The notice is in Redis once the finish landed. After a lost reply it is delivered as Redis
    // holds it: "landed" may also be a job removed meanwhile, whose notice is another finish's.
    if (flowJob && job.parentKey !== undefined && outcome !== 'retried') {
      if (pickup === LANDED_EARLIER) this.flows?.notices.sendStored(job.id);
      else this.flows?.notices.send({ childId: job.id, parentKey: job.parentKey, outcome, value, policy: this.marks.policyOf(lock) });
    }
    if (pickup === LANDED_EARLIER) {
      if (!askedForNext) return undefined;
      // The lock was set by one of the sends: the first one's time is the oldest it can be.
      const handedOver = await this.handovers.reclaim(token);
      return handedOver ? { id: handedOver.id, fields: handedOver.fields, token, acquiredAt: firstSentAt } : undefined;
    }
    return pickup.job ? { id: pickup.job.id, fields: pickup.job.fields, token, acquiredAt } : undefined;
  }
}

/** A DelayedError whose job was not moved by this run: an ordinary failure, saying what was missing. */
function delayedWithoutMove(job: Job, error: Error): Error {
  const failure = new Error(`the handler threw DelayedError, but did not move job ${job.id} to delayed first (await job.moveToDelayed(timestamp, token)): ${error.message}`);
  failure.stack = error.stack;
  return failure;
}

/** A WaitingChildrenError whose job was not moved by this run: an ordinary failure, saying what was missing. */
function waitingWithoutMove(job: Job, error: Error): Error {
  const failure = new Error(`the handler threw WaitingChildrenError, but did not move job ${job.id} to waiting-children first (await job.moveToWaitingChildren(token) answered false, or was not called): ${error.message}`);
  failure.stack = error.stack;
  return failure;
}
