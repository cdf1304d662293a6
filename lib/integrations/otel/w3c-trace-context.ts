import { createTraceState, isSpanContextValid, type SpanContext } from '@opentelemetry/api';

/**
 * The W3C Trace Context headers (https://www.w3.org/TR/trace-context/), written and read here so
 * that a job always carries a `traceparent`, whatever propagator the app configured (or none):
 * that is the field the protocol promises other runtimes (docs/protocol.md, "Trace context").
 */

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/** `traceparent` and, when the span has one, `tracestate` of a span context; empty for an invalid one. */
export function w3cHeaders(spanContext: SpanContext | undefined): Record<string, string> {
  if (!spanContext || !isSpanContextValid(spanContext)) return {};
  const flags = (spanContext.traceFlags & 0xff).toString(16).padStart(2, '0');
  const headers: Record<string, string> = { traceparent: `00-${spanContext.traceId}-${spanContext.spanId}-${flags}` };
  const state = spanContext.traceState?.serialize();
  if (state) headers.tracestate = state;
  return headers;
}

/** The remote span context of a `traceparent` (and `tracestate`), or undefined when it is not one. */
export function parseW3c(traceparent: unknown, tracestate: unknown): SpanContext | undefined {
  if (typeof traceparent !== 'string') return undefined;
  const match = TRACEPARENT.exec(traceparent.trim());
  if (!match) return undefined;
  const [, version, traceId, spanId, flags, rest] = match;
  // Version ff is forbidden; version 00 has nothing after the flags (a later version may).
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined;
  const spanContext: SpanContext = { traceId, spanId, traceFlags: parseInt(flags, 16), isRemote: true };
  if (typeof tracestate === 'string' && tracestate !== '') spanContext.traceState = createTraceState(tracestate);
  return isSpanContextValid(spanContext) ? spanContext : undefined;
}
