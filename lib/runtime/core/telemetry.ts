import { EchoMQOptionError } from '../../protocol/errors.js';
import { describe } from '../../protocol/names.js';

/**
 * The tracing a Queue, Worker or FlowProducer is given with `telemetry`: BullMQ's interface in its
 * `tracer` and `contextManager` members, so an object built for BullMQ's `telemetry` option fits
 * (what else it carries, such as a meter, EchoMQ does not read). The core never imports
 * OpenTelemetry: `@echomq/nestjs/otel` provides `EchoMQOtel`, which implements this with
 * `@opentelemetry/api`. docs/observability.md, "OpenTelemetry".
 */
export interface Telemetry<Context = unknown> {
  /** Starts the spans. */
  tracer: Tracer<Context>;
  /** Holds the active context, and turns a context into the string a job carries (and back). */
  contextManager: ContextManager<Context>;
}

/** Starts spans. */
export interface Tracer<Context = unknown> {
  /** A span named `name`, child of `context` (the active context when none is given). */
  startSpan(name: string, options?: SpanOptions, context?: Context): Span<Context>;
}

/** OpenTelemetry's span kinds, by the same numbers. */
export const SpanKind = { INTERNAL: 0, SERVER: 1, CLIENT: 2, PRODUCER: 3, CONSUMER: 4 } as const;
export type SpanKind = (typeof SpanKind)[keyof typeof SpanKind];

export interface SpanOptions {
  kind: SpanKind;
}

/** One span, as EchoMQ uses it. */
export interface Span<Context = unknown> {
  /** `ctx` with this span as its active span: what runs inside it, and what a job carries on. */
  setSpanOnContext(ctx: Context): Context;
  setAttribute(key: string, value: AttributeValue): void;
  setAttributes(attributes: Attributes): void;
  addEvent(name: string, attributes?: Attributes): void;
  recordException(exception: Exception, time?: Time): void;
  /** Spans are exported once ended. */
  end(): void;
}

/**
 * The active context, and its crossing between processes: `getMetadata` makes the string a job
 * carries in `opts.telemetry.metadata`, `fromMetadata` makes a context of it on the worker.
 */
export interface ContextManager<Context = unknown> {
  /** Runs `fn` with `context` active. (BullMQ's signature, `any` and all, so its implementations fit.) */
  with<A extends (...args: any[]) => any>(context: Context, fn: A): ReturnType<A>;
  active(): Context;
  /** The context as a string for the job ('' for nothing to carry). */
  getMetadata(context: Context): string;
  /** `activeContext` continued from a job's metadata. */
  fromMetadata(activeContext: Context, metadata: string): Context;
  /**
   * The empty context (OpenTelemetry's ROOT_CONTEXT). Optional, and EchoMQ's own (BullMQ's
   * interface has none): a Worker starts its fetch loop, its sweeps and its sandboxes under it, so
   * they carry no context of whoever called `run()`, and a job without a trace context starts a
   * trace of its own. Without it they run under the context active when the Worker was made and run.
   */
  root?(): Context;
}

export type AttributeValue =
  | string
  | number
  | boolean
  | Array<null | undefined | string>
  | Array<null | undefined | number>
  | Array<null | undefined | boolean>;

export interface Attributes {
  [attribute: string]: AttributeValue | undefined;
}

/** What recordException takes: a message, or an error-like object with at least a code, a message or a name. */
export type Exception =
  | string
  | { code: string | number; name?: string; message?: string; stack?: string }
  | { code?: string | number; name?: string; message: string; stack?: string }
  | { code?: string | number; name: string; message?: string; stack?: string };

export type Time = [number, number] | number | Date;

/** A job's own telemetry options (BullMQ's shape), stored with its opts. */
export interface JobTelemetryOptions {
  /**
   * The trace context the job carries to its worker: set by the Queue or FlowProducer that added
   * it (with `telemetry`), or given by the caller to continue another trace. At most 8,192 characters.
   */
  metadata?: string;
  /** Add the job without a trace context: its attempts' spans start traces of their own. Default false. */
  omitContext?: boolean;
}

/** The longest `opts.telemetry.metadata`: a traceparent, a tracestate (at most 512) and some baggage fit many times over. */
export const MAX_METADATA_LENGTH = 8192;

const JOB_TELEMETRY_OPTIONS = new Set(['metadata', 'omitContext']);

/** A `telemetry` option as given: undefined, or an object with what EchoMQ calls (EchoMQOptionError otherwise). */
export function telemetryOf(value: unknown, field = 'telemetry'): Telemetry | undefined {
  if (value === undefined) return undefined;
  const members: Array<[string, string[]]> = [['tracer', ['startSpan']], ['contextManager', ['with', 'active', 'getMetadata', 'fromMetadata']]];
  if (typeof value !== 'object' || value === null) {
    throw new EchoMQOptionError(field, `must be a Telemetry ({ tracer, contextManager }, e.g. new EchoMQOtel() from @echomq/nestjs/otel), got ${describe(value)}`);
  }
  for (const [part, methods] of members) {
    const holder = (value as Record<string, unknown>)[part];
    for (const method of methods) {
      if (typeof (holder as Record<string, unknown> | undefined)?.[method] !== 'function') {
        throw new EchoMQOptionError(`${field}.${part}.${method}`, `must be a function (a Telemetry has tracer.startSpan and contextManager.with, active, getMetadata, fromMetadata), got ${describe((holder as Record<string, unknown> | undefined)?.[method])}`);
      }
    }
  }
  const root = (value as { contextManager: Record<string, unknown> }).contextManager.root;
  if (root !== undefined && typeof root !== 'function') {
    throw new EchoMQOptionError(`${field}.contextManager.root`, `must be a function answering the empty context, or absent, got ${describe(root)}`);
  }
  return value as Telemetry;
}

/** Checks a job's `telemetry` option; `field` names it in the error. */
export function validateJobTelemetry(value: unknown, field: string): void {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new EchoMQOptionError(field, `must be an object { metadata?, omitContext? }, got ${describe(value)}`);
  }
  for (const key of Object.keys(value)) {
    if (!JOB_TELEMETRY_OPTIONS.has(key)) throw new EchoMQOptionError(`${field}.${key}`, 'is not a telemetry option of a job (metadata, omitContext)');
  }
  const { metadata, omitContext } = value as JobTelemetryOptions;
  if (metadata !== undefined && (typeof metadata !== 'string' || metadata.length > MAX_METADATA_LENGTH)) {
    throw new EchoMQOptionError(`${field}.metadata`, `must be a string of at most ${MAX_METADATA_LENGTH} characters (a trace context), got ${describe(metadata)}`);
  }
  if (omitContext !== undefined && typeof omitContext !== 'boolean') {
    throw new EchoMQOptionError(`${field}.omitContext`, `must be true or false, got ${describe(omitContext)}`);
  }
}

/**
 * A job's telemetry option with the trace context of the add that carries it: unchanged when the
 * job omits its context or was given one by the caller (theirs wins).
 */
export function withTraceContext(own: JobTelemetryOptions | undefined, metadata: string): JobTelemetryOptions {
  if (own?.omitContext === true || own?.metadata !== undefined) return own;
  return { ...own, metadata };
}
