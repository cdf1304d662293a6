import { EchoMQError } from '../../protocol/errors.js';
import { asError } from '../core/error-channel.js';
import { JobCancelledError } from '../core/job-cancelled-error.js';
import type { LockReleasedEvent } from '../locks/lock-events.js';
import { LockLostError } from '../locks/lock-lost-error.js';
import type { JobLock } from '../locks/tracked-job.js';
import type { Job } from '../job/job.js';
import { JobTimeoutError } from '../core/job-timeout-error.js';
import { ATTRIBUTES, MESSAGING_SYSTEM, recordFailure, SPAN_EVENTS } from '../telemetry/attributes.js';
import { runWithin } from '../telemetry/guarded-context.js';
import { SpanKind, type Attributes, type ContextManager, type Span, type Telemetry } from '../core/telemetry.js';

/**
 * How an attempt ended: a lock release's reason, `error` (the runner could not finish it), or
 * `abandoned` (the worker gave the job up as it closed: close(true), or a close past closeTimeout).
 */
export type AttemptOutcome = Exclude<LockReleasedEvent['reason'], 'closed'> | 'error' | 'abandoned';

/** Who runs the attempts: for the spans' attributes. */
export interface AttemptSource {
  queueName: string;
  /** The partition's index on a partitioned queue; undefined on a plain one. */
  partition?: number;
  workerId: string;
  workerName?: string;
}

/**
 * A worker lane's tracing: one CONSUMER span per attempt, the child of the context the job carries
 * (its add's PRODUCER span, in whatever process added it). Made only for a worker given
 * `telemetry`. A Telemetry that throws never costs a job: the error goes to `onError` and the
 * attempt runs on, untraced.
 */
export class AttemptSpans {
  constructor(
    private readonly telemetry: Telemetry,
    private readonly source: AttemptSource,
    private readonly onError: (error: Error) => void,
    /**
     * False when the handler runs in a sandbox, where the span cannot be active: it is not made
     * active around the call either, which would only lend the job's context to whatever the pool
     * starts for it (a sandbox's thread or process keeps the context it was started in).
     */
    private readonly activateInHandler = true,
  ) {}

  /** The span of an attempt just picked up (`lock` is its ownership); undefined when the Telemetry threw. */
  begin(job: Job, lock: JobLock): AttemptSpan | undefined {
    let span: Span | undefined;
    try {
      const { tracer, contextManager } = this.telemetry;
      const active = contextManager.active();
      // opts come from Redis, and may have been written by another runtime: trust no shape.
      const metadata = (job.opts.telemetry as { metadata?: unknown } | undefined)?.metadata;
      const parent = typeof metadata === 'string' && metadata !== '' ? contextManager.fromMetadata(active, metadata) : active;
      const { queueName, partition, workerId, workerName } = this.source;
      span = tracer.startSpan(`process ${queueName}`, { kind: SpanKind.CONSUMER }, parent);
      span.setAttributes({
        [ATTRIBUTES.system]: MESSAGING_SYSTEM,
        [ATTRIBUTES.destination]: queueName,
        [ATTRIBUTES.partition]: partition === undefined ? undefined : String(partition),
        [ATTRIBUTES.operationType]: 'process',
        [ATTRIBUTES.operationName]: 'process',
        [ATTRIBUTES.messageId]: job.id,
        [ATTRIBUTES.clientId]: workerId,
        [ATTRIBUTES.workerName]: workerName,
        [ATTRIBUTES.jobName]: job.name,
        [ATTRIBUTES.attempt]: job.attemptsMade + 1,
        [ATTRIBUTES.fencingNumber]: job.attemptsStarted,
        [ATTRIBUTES.stalledCount]: job.stalledCounter > 0 ? job.stalledCounter : undefined,
      });
      const context = this.activateInHandler ? span.setSpanOnContext(parent) : undefined;
      return new AttemptSpan(span, this.activateInHandler, context, contextManager, lock, this.onError);
    } catch (error) {
      this.onError(asError(error));
      // A span started and then left would never be exported, nor freed by an SDK that tracks open spans.
      try {
        span?.end();
      } catch {
        // The Telemetry threw again: reported once above is enough.
      }
      return undefined;
    }
  }
}

/**
 * One attempt's span: open from pickup until the runner lets the job go, or until the job is no
 * longer this worker's (its lock lost, or given up by a closing worker), whatever the handler does.
 */
export class AttemptSpan {
  private ended = false;
  /** An echomq.lock.lost event is on the span already (the heartbeat found the loss). */
  private lockLossRecorded = false;

  constructor(
    private readonly span: Span,
    /** False when the handler runs elsewhere (a sandbox): `within` runs it as it is. */
    private readonly activate: boolean,
    /** The context to run the handler in (this span active), when `activate`. */
    private readonly context: unknown,
    private readonly contextManager: ContextManager,
    private readonly lock: JobLock,
    private readonly onError: (error: Error) => void,
  ) {
    // The moment a heartbeat finds the lock lost (or a timeout or cancel cuts the run) is an event
    // of its own, at its own time: the handler may run on long after it.
    lock.onAbort = (reason) => this.recordAbort(reason);
  }

  /**
   * Runs the handler with this span active: spans the handler starts are its children. A
   * contextManager that throws costs the handler nothing: it runs (once) untraced.
   */
  within<T>(fn: () => T): T {
    if (!this.activate) return fn();
    return runWithin(this.contextManager, this.context, fn, this.onError);
  }

  /** The attempt is over: how, and for a failure, with which error. Once; later calls do nothing. */
  end(outcome: AttemptOutcome, error?: unknown): void {
    if (this.ended) return;
    this.ended = true;
    this.lock.onAbort = undefined;
    try {
      if (outcome === 'lost' && !this.lockLossRecorded) this.span.addEvent(SPAN_EVENTS.lockLost, lossAttributes(error));
      this.span.setAttribute(ATTRIBUTES.outcome, outcome);
      if (error !== undefined && outcome !== 'requeued') recordFailure(this.span, error);
      this.span.end();
    } catch (thrown) {
      this.onError(asError(thrown));
    }
  }

  /**
   * A timeout or a cancel is an event: the runner fails the job at once, and ends the span then. A
   * lost lock or a closing worker's giving up is an event and the span's end: the handler may never
   * return (it need not heed its signal), and the job is not this worker's any more. A job whose
   * finish is in flight is the finish's to judge: its span ends when the finish lands or fails.
   */
  private recordAbort(reason: Error): void {
    if (this.ended) return;
    let outcome: AttemptOutcome | undefined;
    try {
      if (reason instanceof LockLostError) {
        this.span.addEvent(SPAN_EVENTS.lockLost, lossAttributes(reason));
        this.lockLossRecorded = true;
        outcome = 'lost';
      } else if (reason instanceof JobTimeoutError) {
        this.span.addEvent(SPAN_EVENTS.timedOut, { 'echomq.job.timeout_ms': reason.timeout });
      } else if (reason instanceof JobCancelledError) {
        this.span.addEvent(SPAN_EVENTS.cancelled, reason.reason === undefined ? {} : { 'echomq.job.cancel_reason': reason.reason });
      } else {
        this.span.addEvent(SPAN_EVENTS.abandoned, { 'exception.message': reason.message });
        outcome = 'abandoned';
      }
    } catch (thrown) {
      this.onError(asError(thrown));
    }
    if (outcome && !this.lock.releasing) this.end(outcome, reason);
  }
}

/** A lost lock's event attributes: the protocol code (-2 lapsed, -6 another token), when known, and the message. */
function lossAttributes(error: unknown): Attributes {
  const attributes: Attributes = { 'exception.message': asError(error).message };
  if (error instanceof LockLostError || error instanceof EchoMQError) attributes['echomq.lock.code'] = error.code;
  return attributes;
}
