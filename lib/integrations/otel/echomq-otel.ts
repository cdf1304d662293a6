import { context, propagation, ROOT_CONTEXT, SpanStatusCode, trace, type Context, type Span as OtelSpan } from '@opentelemetry/api';
import type { Attributes, AttributeValue, ContextManager, Exception, Span, SpanOptions, Telemetry, Time, Tracer } from '../../runtime/core/telemetry.js';
import { parseW3c, w3cHeaders } from './w3c-trace-context.js';

/**
 * EchoMQ's Telemetry on OpenTelemetry (`@opentelemetry/api`, an optional peer dependency): give it
 * as `telemetry` to a Queue, Worker or FlowProducer, or to EchoMQModule.forRoot. Spans go to the
 * app's registered tracer provider (set up the SDK as usual; without one they cost next to nothing
 * and go nowhere). BullMQ's `new BullMQOtel(name)`, for EchoMQ. docs/observability.md, "OpenTelemetry".
 */
export class EchoMQOtel implements Telemetry<Context> {
  readonly tracer: Tracer<Context>;
  readonly contextManager: ContextManager<Context>;

  /** `tracerName` and `version` name the instrumentation scope of the spans. */
  constructor(readonly tracerName = '@echomq/nestjs', readonly version?: string) {
    // A proxy tracer: a provider registered after this still receives the spans.
    const otelTracer = trace.getTracer(tracerName, version);
    this.tracer = {
      startSpan: (name: string, options?: SpanOptions, ctx?: Context) => new OtelSpanAdapter(otelTracer.startSpan(name, options, ctx)),
    };
    this.contextManager = new OtelContextManager();
  }
}

/** One OpenTelemetry span behind EchoMQ's Span. */
class OtelSpanAdapter implements Span<Context> {
  constructor(private readonly span: OtelSpan) {}

  setSpanOnContext(ctx: Context): Context {
    return trace.setSpan(ctx, this.span);
  }

  setAttribute(key: string, value: AttributeValue): void {
    this.span.setAttribute(key, value);
  }

  setAttributes(attributes: Attributes): void {
    this.span.setAttributes(attributes);
  }

  addEvent(name: string, attributes?: Attributes): void {
    this.span.addEvent(name, attributes);
  }

  /** The exception as an event, and the span's status set to error, as the conventions ask of a failed operation. */
  recordException(exception: Exception, time?: Time): void {
    this.span.recordException(exception, time);
    this.span.setStatus({ code: SpanStatusCode.ERROR, message: typeof exception === 'string' ? exception : exception.message });
  }

  end(): void {
    this.span.end();
  }
}

/**
 * The active context is OpenTelemetry's (the app's context manager: AsyncLocalStorage in Node's
 * SDK). A job's metadata is a JSON object of the propagation carrier: what the app's propagator
 * writes (baggage, B3, ...), and always the W3C `traceparent` (and `tracestate`), written here
 * when the propagator did not (none is configured, or another format), so every job carries them.
 */
class OtelContextManager implements ContextManager<Context> {
  active(): Context {
    return context.active();
  }

  with<A extends (...args: any[]) => any>(ctx: Context, fn: A): ReturnType<A> {
    return context.with(ctx, fn);
  }

  /** A worker's fetch loop runs under it: an attempt of a job without a trace context starts its own trace. */
  root(): Context {
    return ROOT_CONTEXT;
  }

  getMetadata(ctx: Context): string {
    const carrier: Record<string, string> = {};
    propagation.inject(ctx, carrier);
    if (carrier.traceparent === undefined) Object.assign(carrier, w3cHeaders(trace.getSpanContext(ctx)));
    return Object.keys(carrier).length === 0 ? '' : JSON.stringify(carrier);
  }

  fromMetadata(activeContext: Context, metadata: string): Context {
    let carrier: unknown;
    try {
      carrier = JSON.parse(metadata);
    } catch {
      return activeContext; // not ours (another runtime's, or the caller's own): the attempt starts a trace of its own
    }
    if (typeof carrier !== 'object' || carrier === null || Array.isArray(carrier)) return activeContext;
    const extracted = propagation.extract(activeContext, carrier);
    if (trace.getSpanContext(extracted) !== trace.getSpanContext(activeContext)) return extracted;
    const { traceparent, tracestate } = carrier as Record<string, unknown>;
    const remote = parseW3c(traceparent, tracestate);
    return remote ? trace.setSpanContext(extracted, remote) : extracted;
  }
}
