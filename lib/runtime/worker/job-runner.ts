import { Job } from '../job/job.js';
import type { JobContext, RunOwnership } from '../job/job-context.js';
import type { ProcessorFunction } from '../queue/processor.js';
import { isDelayedError } from '../core/delayed-error.js';
import { isWaitingChildrenError } from '../core/waiting-children-error.js';
import type { WorkerLocks } from '../locks/worker-locks.js';
import type { JobLock } from '../locks/tracked-job.js';
import { UnrecoverableError } from '../core/unrecoverable-error.js';
import { JobTimeoutError } from '../core/job-timeout-error.js';
import { CANCEL_MARK_FIELD } from '../../protocol/cancels.js';
import type { SchedulerChain } from '../schedulers/scheduler-chain.js';
import type { AttemptSpan, AttemptSpans } from './attempt-spans.js';
import type { RunSlots } from './run-slots.js';
import { fieldOf, flowLinkOf } from './pickup-fields.js';
import { HandlerContext } from './handler-context.js';
import { RunMarks } from './run-marks.js';
import { JobRelease } from './job-release.js';
import type { ActiveJob, JobRunnerOptions, RunnerEvents } from './job-runner-options.js';

/**
 * Runs one job from pickup to release: its lock tracked, a scheduler's step, a prefetched job's
 * wait for a slot, the processor under its timeout and cancel, then the release (JobRelease:
 * moveToFinished-14 with fetch-next, a retry, or a give-back) of whatever the handler gave.
 */
export class JobRunner {
  /** Which runs were moved away by their handler, which are flow jobs' and parents' (run-marks.ts). */
  private readonly marks = new RunMarks();
  /** The end of each run: its finish, retry or give-back, sent until it lands (job-release.ts). */
  private readonly release: JobRelease;

  private readonly processor: ProcessorFunction;
  private readonly context: JobContext;
  private readonly locks: WorkerLocks;
  private readonly events: RunnerEvents;
  private readonly schedulers?: JobRunnerOptions['schedulers'];
  private readonly jobTimeout?: number;
  private readonly spans?: AttemptSpans;
  private readonly slots?: RunSlots;

  constructor(options: JobRunnerOptions) {
    ({
      processor: this.processor, context: this.context, locks: this.locks, events: this.events, schedulers: this.schedulers,
      jobTimeout: this.jobTimeout, spans: this.spans, slots: this.slots,
    } = options);
    this.release = new JobRelease(options, options.locks, this.marks);
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
    if (slot === 'closing') return this.release.giveBack(job, lock, attempt);
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
    return this.release.settle(job, lock, result, failure, fetchNext, attempt);
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
