import { EchoMQError } from '../../protocol/errors.js';
import { asError } from '../error-channel.js';
import { JobCancelledError } from '../locks/job-cancelled-error.js';
import type { LockReleasedEvent } from '../locks/lock-events.js';
import { LockLostError, type JobLock } from '../locks/worker-locks.js';
import type { Job } from '../queue/job.js';
import { JobTimeoutError } from '../worker/job-timeout-error.js';
import { ATTRIBUTES, MESSAGING_SYSTEM, recordFailure, SPAN_EVENTS } from './attributes.js';
import { SpanKind, type Attributes, type ContextManager, type Span, type Telemetry } from './telemetry.js';

/** How an attempt ended: a lock release's reason, or `error` (the runner could not finish it). */
export type AttemptOutcome = Exclude<LockReleasedEvent['reason'], 'closed'> | 'error';

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
  ) {}

  /** The span of an attempt just picked up (`lock` is its ownership); undefined when the Telemetry threw. */
  begin(job: Job, lock: JobLock): AttemptSpan | undefined {
    try {
      const { tracer, contextManager } = this.telemetry;
      const active = contextManager.active();
      // opts come from Redis, and may have been written by another runtime: trust no shape.
      const metadata = (job.opts.telemetry as { metadata?: unknown } | undefined)?.metadata;
      const parent = typeof metadata === 'string' && metadata !== '' ? contextManager.fromMetadata(active, metadata) : active;
      const { queueName, partition, workerId, workerName } = this.source;
      const span = tracer.startSpan(`process ${queueName}`, { kind: SpanKind.CONSUMER }, parent);
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
      return new AttemptSpan(span, span.setSpanOnContext(parent), contextManager, lock, this.onError);
    } catch (error) {
      this.onError(asError(error));
      return undefined;
    }
  }
}

/** One attempt's span: open from pickup until the runner lets the job go. */
export class AttemptSpan {
  private ended = false;
  /** An event already says why the run was cut short. */
  private abortRecorded = false;

  constructor(
    private readonly span: Span,
    private readonly context: unknown,
    private readonly contextManager: ContextManager,
    private readonly lock: JobLock,
    private readonly onError: (error: Error) => void,
  ) {
    // The moment a heartbeat finds the lock lost (or a timeout or cancel cuts the run) is an event
    // of its own, at its own time: the handler may run on long after it.
    lock.onAbort = (reason) => this.recordAbort(reason);
  }

  /** Runs the handler with this span active: spans the handler starts are its children. */
  within<T>(fn: () => T): T {
    return this.contextManager.with(this.context, fn);
  }

  /** The attempt is over: how, and for a failure, with which error. Once; later calls do nothing. */
  end(outcome: AttemptOutcome, error?: unknown): void {
    if (this.ended) return;
    this.ended = true;
    this.lock.onAbort = undefined;
    try {
      if (outcome === 'lost' && !this.abortRecorded) this.span.addEvent(SPAN_EVENTS.lockLost, lossAttributes(error));
      this.span.setAttribute(ATTRIBUTES.outcome, outcome);
      if (error !== undefined && outcome !== 'requeued') recordFailure(this.span, error);
      this.span.end();
    } catch (thrown) {
      this.onError(asError(thrown));
    }
  }

  private recordAbort(reason: unknown): void {
    if (this.ended) return;
    this.abortRecorded = true;
    try {
      if (reason instanceof LockLostError) this.span.addEvent(SPAN_EVENTS.lockLost, lossAttributes(reason));
      else if (reason instanceof JobTimeoutError) this.span.addEvent(SPAN_EVENTS.timedOut, { 'echomq.job.timeout_ms': reason.timeout });
      else if (reason instanceof JobCancelledError) this.span.addEvent(SPAN_EVENTS.cancelled, reason.reason === undefined ? {} : { 'echomq.job.cancel_reason': reason.reason });
      else this.span.addEvent(SPAN_EVENTS.abandoned, { 'exception.message': asError(reason).message });
    } catch (thrown) {
      this.onError(asError(thrown));
    }
  }
}

/** A lost lock's event attributes: the protocol code (-2 lapsed, -6 another token), when known, and the message. */
function lossAttributes(error: unknown): Attributes {
  const attributes: Attributes = { 'exception.message': asError(error).message };
  if (error instanceof LockLostError || error instanceof EchoMQError) attributes['echomq.lock.code'] = error.code;
  return attributes;
}
