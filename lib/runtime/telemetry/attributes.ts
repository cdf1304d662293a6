import type { Span } from '../core/telemetry.js';

/**
 * The attributes of EchoMQ's spans: OpenTelemetry's messaging conventions where they have a name,
 * EchoMQ's own under `echomq.` where they do not. docs/observability.md, "OpenTelemetry".
 */
export const ATTRIBUTES = {
  system: 'messaging.system',
  destination: 'messaging.destination.name',
  partition: 'messaging.destination.partition.id',
  operationType: 'messaging.operation.type',
  operationName: 'messaging.operation.name',
  messageId: 'messaging.message.id',
  batchCount: 'messaging.batch.message_count',
  clientId: 'messaging.client.id',
  errorType: 'error.type',
  jobName: 'echomq.job.name',
  /** attemptsMade + 1: the attempt this run is, counted as `attempts` counts them. */
  attempt: 'echomq.job.attempt',
  /** attemptsStarted (the hash's `ats`): grows at every pickup, never repeats (docs/reliability.md). */
  fencingNumber: 'echomq.job.fencing_number',
  stalledCount: 'echomq.job.stalled_count',
  workerName: 'echomq.worker.name',
  /** How the attempt ended: completed, failed, retried, requeued, delayed, waiting-children, skipped, lost, abandoned, error. */
  outcome: 'echomq.attempt.outcome',
  movedTo: 'echomq.job.moved_to',
} as const;

/** `messaging.system` of every span. */
export const MESSAGING_SYSTEM = 'echomq';

/** The span events: what happened to an attempt while it ran, and a stall. */
export const SPAN_EVENTS = {
  lockLost: 'echomq.lock.lost',
  timedOut: 'echomq.job.timed_out',
  cancelled: 'echomq.job.cancelled',
  /** The worker gave the job up: close(true), or a close past closeTimeout. */
  abandoned: 'echomq.job.abandoned',
  stalled: 'echomq.job.stalled',
} as const;

/** Marks a span failed by `error`: the exception, and `error.type` as the conventions ask. */
export function recordFailure(span: Span, error: unknown): void {
  const failure = error instanceof Error ? error : new Error(String(error));
  span.recordException(failure);
  span.setAttribute(ATTRIBUTES.errorType, failure.name || 'Error');
}
