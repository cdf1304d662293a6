import 'reflect-metadata';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { context, propagation, ROOT_CONTEXT, SpanKind as OtelSpanKind, SpanStatusCode, trace, type Context } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Injectable, Module } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import {
  EchoMQModule, EchoMQOptionError, FlowProducer, getFlowProducerToken, getQueueToken, InjectFlowProducer, InjectQueue, Keys, Process, Processor, Queue, SpanKind, Worker,
  WorkerOrchestrator, type Job, type Span, type Telemetry,
} from '../lib/index.js';
import { EchoMQOtel } from '../lib/integrations/otel/index.js';
import { StallSpans } from '../lib/runtime/worker/stall-spans.js';
import { runWithin } from '../lib/runtime/telemetry/guarded-context.js';
import { startApp } from './support/nest.js';
import { eventually, newClient, testConnection, uniqueQueueName } from './support/redis.js';

// The OpenTelemetry SDK as an app sets it up, with the in-memory exporter: every ended span lands there.
const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });

beforeAll(() => {
  trace.setGlobalTracerProvider(provider);
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
});
afterAll(async () => {
  await provider.shutdown();
  trace.disable();
  context.disable();
  propagation.disable();
});

const client = newClient();
afterAll(() => client.quit());

/** The ended spans about one queue (by messaging.destination.name), oldest first. */
function spansOf(queueName: string, kind?: OtelSpanKind): ReadableSpan[] {
  return exporter.getFinishedSpans().filter((span) => span.attributes['messaging.destination.name'] === queueName && (kind === undefined || span.kind === kind));
}

const idsOf = (span: ReadableSpan) => span.spanContext();

/** The job's opts as stored in its hash: what any runtime's worker reads. */
async function storedOpts(queueName: string, jobId: string): Promise<Record<string, unknown>> {
  return JSON.parse((await client.hget(new Keys(queueName).job(jobId), 'opts')) ?? 'null') as Record<string, unknown>;
}

/** The traceparent a job carries: version, trace id, parent span id, flags. */
function traceparentOf(opts: Record<string, unknown>): string[] {
  const carrier = JSON.parse((opts.telemetry as { metadata: string }).metadata) as { traceparent: string };
  return carrier.traceparent.split('-');
}

describe('OpenTelemetry: producer and consumer spans', () => {
  it('add: a PRODUCER span, whose context the job carries in opts.telemetry.metadata (a W3C traceparent)', async () => {
    const name = uniqueQueueName('otel-add');
    const queue = new Queue(name, { connection: testConnection(), telemetry: new EchoMQOtel() });
    const job = await queue.add('welcome', { to: 'ada' });
    const [producer, ...others] = spansOf(name);
    expect(others).toEqual([]);
    expect(producer.name).toBe(`add ${name}`);
    expect(producer.kind).toBe(OtelSpanKind.PRODUCER);
    expect(producer.attributes).toEqual({
      'messaging.system': 'echomq',
      'messaging.destination.name': name,
      'messaging.operation.type': 'send',
      'messaging.operation.name': 'add',
      'messaging.message.id': job.id,
      'echomq.job.name': 'welcome',
    });
    const stored = await storedOpts(name, job.id);
    expect(traceparentOf(stored)).toEqual(['00', idsOf(producer).traceId, idsOf(producer).spanId, '01']);
    expect(Object.keys(stored.telemetry as object)).toEqual(['metadata']);
    expect(job.opts.telemetry).toEqual(stored.telemetry); // the Job add() answers with says what Redis holds
    await queue.close();
  });

  it('a separate Worker continues the trace from Redis: a CONSUMER span per attempt, the add\'s child, with the handler\'s own spans inside it', async () => {
    const name = uniqueQueueName('otel-pair');
    // Each side its own instance and connection: the job's hash is the only way across.
    const queue = new Queue(name, { connection: testConnection(), telemetry: new EchoMQOtel('producer-app') });
    const job = await queue.add('render', { pages: 2 });
    await queue.close();
    const appTracer = trace.getTracer('handler');
    const worker = new Worker(name, async () => {
      appTracer.startActiveSpan('inside the handler', (span) => span.end());
      return 'done';
    }, { connection: testConnection(), telemetry: new EchoMQOtel('worker-app'), name: 'renderer' });
    await new Promise<void>((resolveDone) => worker.once('completed', () => resolveDone()));
    await worker.close();

    const producer = spansOf(name, OtelSpanKind.PRODUCER)[0];
    const [consumer, ...more] = spansOf(name, OtelSpanKind.CONSUMER);
    expect(more).toEqual([]);
    expect(consumer.name).toBe(`process ${name}`);
    expect(consumer.instrumentationScope.name).toBe('worker-app');
    expect(idsOf(consumer).traceId).toBe(idsOf(producer).traceId);
    expect(consumer.parentSpanContext?.spanId).toBe(idsOf(producer).spanId);
    expect(consumer.parentSpanContext?.isRemote).toBe(true);
    expect(consumer.attributes).toEqual({
      'messaging.system': 'echomq',
      'messaging.destination.name': name,
      'messaging.operation.type': 'process',
      'messaging.operation.name': 'process',
      'messaging.message.id': job.id,
      'messaging.client.id': worker.id,
      'echomq.worker.name': 'renderer',
      'echomq.job.name': 'render',
      'echomq.job.attempt': 1,
      'echomq.job.fencing_number': 1,
      'echomq.attempt.outcome': 'completed',
    });
    expect(consumer.status.code).not.toBe(SpanStatusCode.ERROR);
    const inner = exporter.getFinishedSpans().find((span) => span.name === 'inside the handler' && span.parentSpanContext?.spanId === idsOf(consumer).spanId);
    expect(inner?.spanContext().traceId).toBe(idsOf(producer).traceId);
  });

  it('a job another runtime wrote with a traceparent of its own: the worker continues that very trace', async () => {
    const name = uniqueQueueName('otel-foreign');
    const queue = new Queue(name, { connection: testConnection() }); // no telemetry: the caller gives the context
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const spanId = '00f067aa0ba902b7';
    const metadata = JSON.stringify({ traceparent: `00-${traceId}-${spanId}-01`, tracestate: 'go=1' });
    const job = await queue.add('from-go', {}, { telemetry: { metadata } });
    expect((await storedOpts(name, job.id)).telemetry).toEqual({ metadata });
    const worker = new Worker(name, async () => 'ok', { connection: testConnection(), telemetry: new EchoMQOtel() });
    await new Promise<void>((resolveDone) => worker.once('completed', () => resolveDone()));
    await worker.close();
    await queue.close();
    const [consumer] = spansOf(name, OtelSpanKind.CONSUMER);
    expect(idsOf(consumer).traceId).toBe(traceId);
    expect(consumer.parentSpanContext?.spanId).toBe(spanId);
    expect(idsOf(consumer).traceState?.get('go')).toBe('1');
  });

  it('retries: one CONSUMER span per attempt, each the add\'s child, with its attempt and fencing number; failed attempts are errors', async () => {
    const name = uniqueQueueName('otel-retry');
    const telemetry = new EchoMQOtel();
    const queue = new Queue(name, { connection: testConnection(), telemetry });
    let runs = 0;
    const worker = new Worker(name, async () => {
      if (++runs < 3) throw new Error(`flaky ${runs}`);
      return 'third time';
    }, { connection: testConnection(), telemetry });
    const completed = new Promise<void>((resolveDone) => worker.once('completed', () => resolveDone()));
    const job = await queue.add('flaky', {}, { attempts: 3 });
    await completed;
    await worker.close();
    await queue.close();
    const producer = spansOf(name, OtelSpanKind.PRODUCER)[0];
    const attempts = spansOf(name, OtelSpanKind.CONSUMER);
    expect(attempts.map((span) => [span.attributes['echomq.job.attempt'], span.attributes['echomq.job.fencing_number'], span.attributes['echomq.attempt.outcome']]))
      .toEqual([[1, 1, 'retried'], [2, 2, 'retried'], [3, 3, 'completed']]);
    for (const span of attempts) {
      expect(span.attributes['messaging.message.id']).toBe(job.id);
      expect(span.parentSpanContext?.spanId).toBe(idsOf(producer).spanId);
      expect(idsOf(span).traceId).toBe(idsOf(producer).traceId);
    }
    expect(attempts.map((span) => span.status.code)).toEqual([SpanStatusCode.ERROR, SpanStatusCode.ERROR, SpanStatusCode.UNSET]);
    expect(attempts[0].events.find((event) => event.name === 'exception')?.attributes?.['exception.message']).toBe('flaky 1');
    expect(attempts[1].attributes['error.type']).toBe('Error');
  });

  it('addBulk: one PRODUCER span with the batch count; every job carries its context', async () => {
    const name = uniqueQueueName('otel-bulk');
    const queue = new Queue(name, { connection: testConnection(), telemetry: new EchoMQOtel() });
    const jobs = await queue.addBulk([{ name: 'a', data: 1 }, { name: 'b', data: 2 }, { name: 'c', data: 3 }]);
    await queue.close();
    const [bulk, ...others] = spansOf(name);
    expect(others).toEqual([]);
    expect(bulk.name).toBe(`addBulk ${name}`);
    expect(bulk.attributes['messaging.batch.message_count']).toBe(3);
    for (const job of jobs) expect(traceparentOf(await storedOpts(name, job.id))[2]).toBe(idsOf(bulk).spanId);
  });

  it('FlowProducer.add: one PRODUCER span; every job of the tree carries it, and each attempt is its child', async () => {
    const parents = uniqueQueueName('otel-flow-parent');
    const children = uniqueQueueName('otel-flow-child');
    const telemetry = new EchoMQOtel();
    const producer = new FlowProducer({ connection: testConnection(), telemetry });
    const tree = await producer.add({
      name: 'report', queueName: parents, children: [{ name: 'page', queueName: children, data: 1 }, { name: 'page', queueName: children, data: 2 }],
    });
    await producer.close();
    const [flowSpan, ...others] = spansOf(parents, OtelSpanKind.PRODUCER);
    expect(others).toEqual([]);
    expect(flowSpan.name).toBe(`addFlow ${parents}`);
    expect(flowSpan.attributes['messaging.message.id']).toBe(tree.job.id);
    expect(traceparentOf(await storedOpts(parents, tree.job.id))[2]).toBe(idsOf(flowSpan).spanId);
    const childWorker = new Worker(children, async (job) => job.data, { connection: testConnection(), telemetry });
    const parentWorker = new Worker(parents, async () => 'all pages', { connection: testConnection(), telemetry });
    await new Promise<void>((resolveDone) => parentWorker.once('completed', () => resolveDone()));
    await Promise.all([childWorker.close(), parentWorker.close()]);
    const attempts = [...spansOf(children, OtelSpanKind.CONSUMER), ...spansOf(parents, OtelSpanKind.CONSUMER)];
    expect(attempts).toHaveLength(3);
    for (const span of attempts) expect(span.parentSpanContext?.spanId).toBe(idsOf(flowSpan).spanId);
  });

  it('omitContext: the add has its span, the job carries no context, its attempt starts a trace of its own', async () => {
    const name = uniqueQueueName('otel-omit');
    const telemetry = new EchoMQOtel();
    const queue = new Queue(name, { connection: testConnection(), telemetry });
    const job = await queue.add('alone', {}, { telemetry: { omitContext: true } });
    expect((await storedOpts(name, job.id)).telemetry).toEqual({ omitContext: true });
    const worker = new Worker(name, async () => 'ok', { connection: testConnection(), telemetry });
    await new Promise<void>((resolveDone) => worker.once('completed', () => resolveDone()));
    await worker.close();
    await queue.close();
    const producer = spansOf(name, OtelSpanKind.PRODUCER)[0];
    const consumer = spansOf(name, OtelSpanKind.CONSUMER)[0];
    expect(producer).toBeDefined();
    expect(consumer.parentSpanContext).toBeUndefined();
    expect(idsOf(consumer).traceId).not.toBe(idsOf(producer).traceId);
  });
});

describe('OpenTelemetry: lock loss and stalls', () => {
  it('a lock lost while the handler runs is an event of its attempt, at the moment the heartbeat found it', async () => {
    const name = uniqueQueueName('otel-lost');
    const telemetry = new EchoMQOtel();
    const queue = new Queue(name, { connection: testConnection(), telemetry });
    // The handler holds the job until its signal aborts (the heartbeat found the lock gone).
    const worker = new Worker(name, (_job, { signal }) => new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason))),
      { connection: testConnection(), telemetry, lockDuration: 2000, lockRenewTime: 100, stalledInterval: 60_000 });
    const lost = new Promise<Error>((resolveLost) => worker.once('lockLost', (_job, error) => resolveLost(error)));
    const job = await queue.add('held', {});
    await eventually(async () => (await client.exists(queue.keys.lock(job.id))) === 1, 5000, 'the worker holds the lock');
    await client.del(queue.keys.lock(job.id));
    expect((await lost).name).toBe('LockLostError');
    await worker.close();
    await queue.close();
    const [attempt] = spansOf(name, OtelSpanKind.CONSUMER);
    expect(attempt.attributes['echomq.attempt.outcome']).toBe('lost');
    const events = attempt.events.filter((event) => event.name === 'echomq.lock.lost');
    expect(events).toHaveLength(1);
    expect(events[0].attributes?.['echomq.lock.code']).toBe(-2);
    expect(attempt.status.code).toBe(SpanStatusCode.ERROR);
  });

  it('a timeout and a cancel are events of the attempt they cut short', async () => {
    const name = uniqueQueueName('otel-cut');
    const telemetry = new EchoMQOtel();
    const queue = new Queue(name, { connection: testConnection(), telemetry });
    const hang = (_job: Job, { signal }: { signal: AbortSignal }) => new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
    const worker = new Worker(name, hang, { connection: testConnection(), telemetry, concurrency: 2 });
    let failures = 0;
    const bothFailed = new Promise<void>((resolveDone) => worker.on('failed', () => ++failures === 2 && resolveDone()));
    const slow = await queue.add('slow', {}, { timeout: 100 });
    const cancelled = await queue.add('unwanted', {});
    await eventually(() => worker.cancelJob(cancelled.id, 'not needed'), 5000, 'the worker runs the job to cancel');
    await bothFailed;
    await worker.close();
    await queue.close();
    const attemptOf = (id: string) => spansOf(name, OtelSpanKind.CONSUMER).find((span) => span.attributes['messaging.message.id'] === id)!;
    expect(attemptOf(slow.id).events.map((event) => [event.name, event.attributes])).toEqual([
      ['echomq.job.timed_out', { 'echomq.job.timeout_ms': 100 }],
      ['exception', expect.objectContaining({ 'exception.type': 'JobTimeoutError' })],
    ]);
    expect(attemptOf(cancelled.id).events.map((event) => [event.name, event.attributes])).toEqual([
      ['echomq.job.cancelled', { 'echomq.job.cancel_reason': 'not needed' }],
      ['exception', expect.objectContaining({ 'exception.type': 'JobCancelledError' })],
    ]);
    expect([attemptOf(slow.id), attemptOf(cancelled.id)].map((span) => span.attributes['echomq.attempt.outcome'])).toEqual(['failed', 'failed']);
  });

  it('a stall is a span in the job\'s trace, by the worker that swept it; the next attempt says how often it stalled', async () => {
    const name = uniqueQueueName('otel-stall');
    const telemetry = new EchoMQOtel();
    const queue = new Queue(name, { connection: testConnection(), telemetry });
    // Worker A renews every 3 s a lock that lives 1 s (the escape hatch for demos): its lock lapses.
    let releaseFirst!: () => void;
    const first = new Worker(name, () => new Promise<string>((resolveRun) => (releaseFirst = () => resolveRun('late'))), {
      connection: testConnection(), lockDuration: 1000, unsafeLockRenewTime: 3000, stalledInterval: 300, telemetry,
    });
    first.on('error', () => undefined);
    const job = await queue.add('slow', {});
    await eventually(() => first.runningCount === 1, 5000, 'worker A runs the job');
    const second = new Worker(name, async () => 'recovered', { connection: testConnection(), lockDuration: 1000, stalledInterval: 300, telemetry });
    await new Promise<void>((resolveDone) => second.once('completed', () => resolveDone()));
    releaseFirst();
    await Promise.all([first.close(), second.close()]);
    await queue.close();
    const producer = spansOf(name, OtelSpanKind.PRODUCER)[0];
    const stall = spansOf(name, OtelSpanKind.INTERNAL).find((span) => span.name === `stalled ${name}`)!;
    expect(stall.parentSpanContext?.spanId).toBe(idsOf(producer).spanId);
    expect(stall.attributes).toMatchObject({ 'messaging.message.id': job.id, 'echomq.job.stalled_count': 1, 'echomq.job.moved_to': 'wait' });
    expect(stall.events.map((event) => [event.name, event.attributes])).toEqual([['echomq.job.stalled', { 'echomq.job.stalled_count': 1, 'echomq.job.moved_to': 'wait' }]]);
    const recovered = spansOf(name, OtelSpanKind.CONSUMER).find((span) => span.attributes['echomq.attempt.outcome'] === 'completed')!;
    expect(recovered.attributes).toMatchObject({ 'echomq.job.fencing_number': 2, 'echomq.job.attempt': 1, 'echomq.job.stalled_count': 1 });
    expect(recovered.parentSpanContext?.spanId).toBe(idsOf(producer).spanId);
  });
});

describe('OpenTelemetry: runWithin runs the callback exactly once, whatever the ContextManager does', () => {
  const manager = (withImpl: (fn: () => unknown) => unknown) => ({ active: () => undefined, with: (_c: unknown, fn: () => unknown) => withImpl(fn) }) as unknown as Parameters<typeof runWithin>[0];

  it('a manager that calls back twice, or late, runs nothing more', async () => {
    const errors: Error[] = [];
    let runs = 0;
    expect(runWithin(manager((fn) => { fn(); return fn(); }), undefined, () => ++runs, (e) => errors.push(e))).toBe(1);
    expect(runs).toBe(1);
    let late!: () => unknown;
    expect(runWithin(manager((fn) => { late = fn; }), undefined, () => ++runs, (e) => errors.push(e))).toBe(2);
    expect(() => late()).toThrow(/ran the same callback twice/);
    expect(runs).toBe(2);
    expect(errors.map((e) => e.message)).toEqual([expect.stringMatching(/ran the same callback twice/)]);
  });
});

describe('OpenTelemetry: stall spans and a Telemetry that throws', () => {
  it('a span whose attributes throw is ended and reported; the sweep\'s other stalls are still traced', async () => {
    const name = uniqueQueueName('otel-stall-throw');
    const base = new EchoMQOtel('stall-test');
    let calls = 0;
    const telemetry = {
      ...base,
      contextManager: base.contextManager,
      tracer: {
        startSpan: (...args: Parameters<typeof base.tracer.startSpan>) => {
          const span = base.tracer.startSpan(...args);
          if (calls++ > 0) return span;
          return Object.assign(Object.create(span) as typeof span, {
            setAttributes: () => { throw new Error('setAttributes broke'); },
            end: () => span.end(),
          });
        },
      },
    } as unknown as ConstructorParameters<typeof StallSpans>[0];
    const errors: Error[] = [];
    const spans = new StallSpans(telemetry, client, name, (error) => errors.push(error));
    await spans.record(new Keys(name), { movedToWait: [{ jobId: 'a', stalledCount: 1 }, { jobId: 'b', stalledCount: 1 }], movedToFailed: [] });
    expect(errors.map((error) => error.message)).toEqual(['setAttributes broke']);
    const ended = exporter.getFinishedSpans().filter((span) => span.name === `stalled ${name}`);
    // Both spans ended: a's without its attributes (they threw), b's whole.
    expect(ended).toHaveLength(2);
    expect(ended.map((span) => span.attributes['messaging.message.id'])).toEqual([undefined, 'b']);
  });
});

describe('OpenTelemetry: none of it without the option', () => {
  it('a Queue and a Worker without telemetry: no span, and the job opts carry no telemetry field', async () => {
    const name = uniqueQueueName('otel-none');
    const queue = new Queue(name, { connection: testConnection() });
    const worker = new Worker(name, async () => 'ok', { connection: testConnection() });
    const completed = new Promise<void>((resolveDone) => worker.once('completed', () => resolveDone()));
    // Even inside an active span of the app: EchoMQ makes none of its own.
    const job = await trace.getTracer('app').startActiveSpan('app work', async (span) => {
      const added = await queue.add('plain', {}, { attempts: 2 });
      span.end();
      return added;
    });
    const [bulk] = await queue.addBulk([{ name: 'plain', data: 2 }]);
    await completed;
    await worker.close();
    await queue.close();
    expect(await storedOpts(name, job.id)).toEqual({ attempts: 2 });
    expect(await storedOpts(name, bulk.id)).toEqual({});
    expect(job.opts).toEqual({ attempts: 2 });
    expect(spansOf(name)).toEqual([]);
  });

  it('the core entry never loads @opentelemetry; @echomq/nestjs/otel does', () => {
    const core = reachablePackages('../lib/index.ts');
    expect(core.has('ioredis')).toBe(true); // the walk does reach the runtime
    expect([...core].filter((name) => name.startsWith('@opentelemetry'))).toEqual([]);
    expect(reachablePackages('../lib/integrations/otel/index.ts').has('@opentelemetry/api')).toBe(true);
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
    expect(pkg.peerDependenciesMeta['@opentelemetry/api']).toEqual({ optional: true });
  });
});

describe('OpenTelemetry: bad input', () => {
  it('a telemetry without what EchoMQ calls is refused by name, before Redis', () => {
    const connection = 'redis://127.0.0.1:1'; // never reached: the refusal comes first
    expect(() => new Queue('q', { connection, telemetry: {} as never })).toThrow(expect.objectContaining({ name: 'EchoMQOptionError', field: 'telemetry.tracer.startSpan' }));
    const noManager = { tracer: { startSpan: () => undefined } } as never;
    expect(() => new Worker('q', async () => 1, { connection, autorun: false, telemetry: noManager })).toThrow(EchoMQOptionError);
    expect(() => new FlowProducer({ connection, telemetry: 'otel' as never })).toThrow(expect.objectContaining({ field: 'telemetry' }));
  });

  it('a job\'s telemetry option is checked like the others', async () => {
    const queue = new Queue(uniqueQueueName('otel-bad'), { connection: testConnection() });
    await expect(queue.add('x', {}, { telemetry: { metadata: 7 as never } })).rejects.toMatchObject({ field: 'add: opts.telemetry.metadata' });
    await expect(queue.add('x', {}, { telemetry: { omitContext: 'yes' as never } })).rejects.toMatchObject({ field: 'add: opts.telemetry.omitContext' });
    await expect(queue.add('x', {}, { telemetry: { traceparent: 'x' } as never })).rejects.toMatchObject({ field: 'add: opts.telemetry.traceparent' });
    await queue.close();
  });
});

describe('EchoMQOtel without a propagator', () => {
  it('a job still carries the W3C traceparent, and a worker still continues it', () => {
    propagation.disable(); // the API's default: a no-op propagator
    try {
      const { tracer, contextManager } = new EchoMQOtel();
      const span = tracer.startSpan('add q', { kind: 3 }, ROOT_CONTEXT);
      const metadata = contextManager.getMetadata(span.setSpanOnContext(ROOT_CONTEXT));
      span.end();
      const sent = trace.getSpanContext(span.setSpanOnContext(ROOT_CONTEXT))!;
      expect(JSON.parse(metadata)).toEqual({ traceparent: `00-${sent.traceId}-${sent.spanId}-01` });
      const received = trace.getSpanContext(contextManager.fromMetadata(ROOT_CONTEXT, metadata));
      expect(received).toMatchObject({ traceId: sent.traceId, spanId: sent.spanId, isRemote: true });
      expect(trace.getSpanContext(contextManager.fromMetadata(ROOT_CONTEXT, 'not json'))).toBeUndefined();
    } finally {
      propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    }
  });
});

describe('OpenTelemetry in Nest: the option reaches the workers (nestjs/bull#2524)', () => {
  let app: TestingModule | undefined;
  beforeEach(async () => {
    await app?.close();
    app = undefined;
  });
  afterAll(() => app?.close());

  it('forRoot({ telemetry }) reaches the registered queues, the @Processor workers and the flow producers', async () => {
    const name = uniqueQueueName('otel-nest');
    const children = uniqueQueueName('otel-nest-child');
    @Processor(name)
    class Mailer {
      @Process() send(job: Job) {
        return `sent ${job.name}`;
      }
    }
    @Processor(children)
    class Pages {
      @Process() page() {
        return 'page';
      }
    }
    @Injectable()
    class Producer {
      constructor(@InjectQueue(name) readonly queue: Queue, @InjectFlowProducer() readonly flows: FlowProducer) {}
    }
    app = await startApp({
      imports: [
        EchoMQModule.forRoot({ connection: testConnection(), telemetry: new EchoMQOtel('root') }),
        EchoMQModule.registerQueue(name),
        EchoMQModule.registerFlowProducer(),
      ],
      providers: [Mailer, Pages, Producer],
    });
    const producer = app.get(Producer);
    await producer.queue.add('welcome', {});
    await producer.flows.add({ name: 'flow-parent', queueName: name, children: [{ name: 'page', queueName: children }] });
    await eventually(() => spansOf(name, OtelSpanKind.CONSUMER).length === 2 && spansOf(children, OtelSpanKind.CONSUMER).length === 1, 10_000, 'the workers traced their jobs');
    const [added, flowAdded] = spansOf(name, OtelSpanKind.PRODUCER);
    expect([added.name, flowAdded.name]).toEqual([`add ${name}`, `addFlow ${name}`]);
    const attempts = [...spansOf(name, OtelSpanKind.CONSUMER), ...spansOf(children, OtelSpanKind.CONSUMER)];
    expect(attempts.map((span) => span.instrumentationScope.name)).toEqual(['root', 'root', 'root']);
    const byJob = new Map(attempts.map((span) => [span.attributes['echomq.job.name'], span.parentSpanContext?.spanId]));
    expect(byJob).toEqual(new Map([['welcome', idsOf(added).spanId], ['flow-parent', idsOf(flowAdded).spanId], ['page', idsOf(flowAdded).spanId]]));
  });

  it('registerQueue({ telemetry }) reaches that queue and its worker; a @Processor\'s own wins for its worker', async () => {
    const traced = uniqueQueueName('otel-nest-queue');
    const own = uniqueQueueName('otel-nest-own');
    @Processor(traced)
    class Traced {
      @Process() run() {
        return 1;
      }
    }
    @Processor({ name: own, telemetry: new EchoMQOtel('processor') })
    class Own {
      @Process() run() {
        return 2;
      }
    }
    app = await startApp({
      imports: [
        EchoMQModule.forRoot({ connection: testConnection() }), // no root telemetry
        EchoMQModule.registerQueue({ name: traced, telemetry: new EchoMQOtel('queue') }, own),
      ],
      providers: [Traced, Own],
    });
    const tracedQueue = app.get<Queue>(getQueueToken(traced), { strict: false });
    await tracedQueue.add('one', {});
    await app.get<Queue>(getQueueToken(own), { strict: false }).add('two', {});
    await eventually(() => spansOf(traced, OtelSpanKind.CONSUMER).length === 1 && spansOf(own, OtelSpanKind.CONSUMER).length === 1, 10_000, 'both workers traced');
    expect(spansOf(traced).map((span) => [span.kind, span.instrumentationScope.name])).toEqual([[OtelSpanKind.PRODUCER, 'queue'], [OtelSpanKind.CONSUMER, 'queue']]);
    // Its queue has no telemetry: the add made no span and the job carries no context.
    expect(spansOf(own).map((span) => [span.kind, span.instrumentationScope.name])).toEqual([[OtelSpanKind.CONSUMER, 'processor']]);
  });

  it('the configuration\'s worker.telemetry wins over its telemetry for the worker of a registered queue; null opts a queue, a processor or a flow producer out', async () => {
    const plain = uniqueQueueName('otel-nest-default');
    const untracedQueue = uniqueQueueName('otel-nest-null-queue');
    const untracedWorker = uniqueQueueName('otel-nest-null-worker');
    @Processor(plain)
    class Plain {
      @Process() run() {
        return 1;
      }
    }
    @Processor(untracedQueue)
    class OffByQueue {
      @Process() run() {
        return 2;
      }
    }
    @Processor({ name: untracedWorker, telemetry: null })
    class OffByProcessor {
      @Process() run() {
        return 3;
      }
    }
    app = await startApp({
      imports: [
        EchoMQModule.forRoot({ connection: testConnection(), telemetry: new EchoMQOtel('root'), worker: { telemetry: new EchoMQOtel('worker-default') } }),
        EchoMQModule.registerQueue(plain, { name: untracedQueue, telemetry: null }, untracedWorker),
        EchoMQModule.registerFlowProducer({ telemetry: null }),
      ],
      providers: [Plain, OffByQueue, OffByProcessor],
    });
    const finished = Promise.all([plain, untracedQueue, untracedWorker].map((name) => new Promise<void>((resolveDone) => {
      app!.get(WorkerOrchestrator).getWorker(name)!.once('completed', () => resolveDone());
    })));
    for (const name of [plain, untracedQueue, untracedWorker]) await app.get<Queue>(getQueueToken(name), { strict: false }).add('one', {});
    await finished;
    // The queue takes the configuration's telemetry, its worker the configuration's worker default.
    expect(spansOf(plain).map((span) => [span.kind, span.instrumentationScope.name])).toEqual([[OtelSpanKind.PRODUCER, 'root'], [OtelSpanKind.CONSUMER, 'worker-default']]);
    expect(spansOf(untracedQueue)).toEqual([]); // neither the queue nor its worker
    expect(spansOf(untracedWorker).map((span) => [span.kind, span.instrumentationScope.name])).toEqual([[OtelSpanKind.PRODUCER, 'root']]);
    const flowsOnly = uniqueQueueName('otel-nest-null-flows');
    await app.get<FlowProducer>(getFlowProducerToken(), { strict: false }).add({ name: 'untraced', queueName: flowsOnly });
    expect(spansOf(flowsOnly)).toEqual([]);
  });

  it('refuses two registrations of one queue with different telemetry, as it does different partition counts', async () => {
    const name = uniqueQueueName('otel-nest-twice');
    const shared = new EchoMQOtel('shared');
    const connection = newClient(); // ours: a failed compile leaves nothing else to close it
    const compile = (first: object, second: object) => {
      @Module({ imports: [EchoMQModule.registerQueue({ name, ...first })] })
      class FeatureA {}
      @Module({ imports: [EchoMQModule.registerQueue({ name, ...second })] })
      class FeatureB {}
      return Test.createTestingModule({ imports: [EchoMQModule.forRoot({ connection }), FeatureA, FeatureB] }).compile()
        .then(async (moduleRef) => {
          await moduleRef.close();
          return undefined;
        }, (error: unknown) => error);
    };
    try {
      for (const [first, second, wording] of [
        [{}, { telemetry: shared }, /is registered with no telemetry given \(the configuration's\) and with a telemetry/],
        [{ telemetry: null }, { telemetry: shared }, /is registered with telemetry: null \(none\) and with a telemetry/],
        [{ telemetry: shared }, { telemetry: new EchoMQOtel('shared') }, /is registered with a telemetry and with another telemetry object/],
      ] as Array<[object, object, RegExp]>) {
        const refused = await compile(first, second);
        expect(refused).toBeInstanceOf(EchoMQOptionError);
        expect(refused).toMatchObject({ field: 'telemetry' });
        expect((refused as Error).message).toMatch(wording);
      }
      expect(await compile({ telemetry: shared }, { telemetry: shared })).toBeUndefined(); // the same instance is the same setting
      // A registration that gives none has no say, before or after one that gives it (a name-only registerQueue in a consumer module).
      expect(await compile({ telemetry: shared }, {})).toBeUndefined();
      expect(await compile({}, {})).toBeUndefined();
    } finally {
      await connection.quit();
    }
  });
});

describe('OpenTelemetry: an attempt\'s span ends when the job stops being this worker\'s', () => {
  /** A handler that never returns and never reads its signal. */
  const hang = () => new Promise<never>(() => undefined);

  it('close(true) with a handler that ignores its signal: the span ends at the close, abandoned', async () => {
    const name = uniqueQueueName('otel-abandon');
    const telemetry = new EchoMQOtel();
    const queue = new Queue(name, { connection: testConnection(), telemetry });
    const worker = new Worker(name, hang, { connection: testConnection(), telemetry });
    await queue.add('hangs', {});
    await eventually(() => worker.runningCount === 1, 5000, 'the worker runs the job');
    await worker.close(true);
    await queue.close();
    const [attempt, ...more] = spansOf(name, OtelSpanKind.CONSUMER);
    expect(more).toEqual([]);
    expect(attempt.attributes['echomq.attempt.outcome']).toBe('abandoned');
    expect(attempt.events.map((event) => event.name)).toEqual(['echomq.job.abandoned', 'exception']);
    expect(attempt.status.code).toBe(SpanStatusCode.ERROR);
  });

  it('a lost lock with a handler that ignores its signal: the span ends at the loss, lost', async () => {
    const name = uniqueQueueName('otel-lost-hang');
    const telemetry = new EchoMQOtel();
    const queue = new Queue(name, { connection: testConnection(), telemetry });
    const worker = new Worker(name, hang, { connection: testConnection(), telemetry, lockDuration: 2000, lockRenewTime: 100, stalledInterval: 60_000 });
    const job = await queue.add('hangs', {});
    await eventually(async () => (await client.exists(queue.keys.lock(job.id))) === 1, 5000, 'the worker holds the lock');
    await client.del(queue.keys.lock(job.id));
    // The handler is still running: only the span's end can have exported it.
    await eventually(() => spansOf(name, OtelSpanKind.CONSUMER).length === 1, 5000, 'the attempt\'s span ended');
    expect(worker.runningCount).toBe(1);
    const [attempt] = spansOf(name, OtelSpanKind.CONSUMER);
    expect(attempt.attributes['echomq.attempt.outcome']).toBe('lost');
    expect(attempt.events.map((event) => [event.name, event.attributes?.['echomq.lock.code']])).toEqual([['echomq.lock.lost', -2], ['exception', undefined]]);
    await worker.close(true);
    await queue.close();
  });

  it('a timeout, then a finish that finds the lock gone (-2): the lock loss is an event too', async () => {
    const name = uniqueQueueName('otel-timeout-lost');
    const telemetry = new EchoMQOtel();
    const queue = new Queue(name, { connection: testConnection(), telemetry });
    // No heartbeat tick before the timeout: only the finish can find the lock gone.
    const worker = new Worker(name, async (job) => {
      await client.del(queue.keys.lock(job.id));
      return hang();
    }, { connection: testConnection(), telemetry, lockDuration: 30_000, lockRenewTime: 20_000 });
    const lost = new Promise<Error>((resolveLost) => worker.once('lockLost', (_job, error) => resolveLost(error)));
    await queue.add('slow', {}, { timeout: 200 });
    expect(await lost).toMatchObject({ code: -2 });
    await worker.close(true);
    await queue.close();
    const [attempt] = spansOf(name, OtelSpanKind.CONSUMER);
    expect(attempt.attributes['echomq.attempt.outcome']).toBe('lost');
    expect(attempt.events.map((event) => [event.name, event.attributes?.['echomq.lock.code']])).toEqual([
      ['echomq.job.timed_out', undefined], ['echomq.lock.lost', -2], ['exception', undefined],
    ]);
  });
});

describe('OpenTelemetry: the contexts a worker runs in', () => {
  it('a worker run inside an app\'s span: an attempt of a job without a trace context starts a trace of its own', async () => {
    const name = uniqueQueueName('otel-root');
    const queue = new Queue(name, { connection: testConnection() }); // no telemetry: the job carries no context
    await queue.add('alone', {});
    const worker = new Worker(name, async () => 'ok', { connection: testConnection(), telemetry: new EchoMQOtel(), autorun: false });
    const completed = new Promise<void>((resolveDone) => worker.once('completed', () => resolveDone()));
    trace.getTracer('app').startActiveSpan('app startup', (span) => {
      void worker.run();
      span.end();
    });
    await completed;
    await worker.close();
    await queue.close();
    const [attempt] = spansOf(name, OtelSpanKind.CONSUMER);
    expect(attempt.parentSpanContext).toBeUndefined();
  });

  it('sandboxed: the attempt\'s span is never made active here, and no context leaks into the sandbox, the runner\'s nor an attempt\'s', async () => {
    const file = fileURLToPath(new URL('./fixtures/sandbox/processor.mjs', import.meta.url));
    const otel = new EchoMQOtel();
    const manager = otel.contextManager;
    const activated: Array<string | undefined> = []; // the span of every context the worker made active
    const recording = {
      active: () => manager.active(),
      getMetadata: (ctx: Context) => manager.getMetadata(ctx),
      fromMetadata: (active: Context, metadata: string) => manager.fromMetadata(active, metadata),
      with: <A extends (...args: any[]) => any>(ctx: Context, fn: A): ReturnType<A> => {
        activated.push(trace.getSpan(ctx)?.spanContext().spanId);
        return manager.with(ctx, fn);
      },
    };
    // EchoMQOtel's, and one without the optional contextManager.root (BullMQ's shape), whose fetch
    // loop runs in the context of whoever called run().
    const withRoot: Telemetry<Context> = { tracer: otel.tracer, contextManager: { ...recording, root: () => manager.root!() } };
    const rootless: Telemetry<Context> = { tracer: otel.tracer, contextManager: recording };
    for (const telemetry of [withRoot, rootless]) {
      const name = uniqueQueueName('otel-sandbox');
      const queue = new Queue(name, { connection: testConnection(), telemetry: otel });
      const worker = new Worker(name, file, { connection: testConnection(), telemetry, concurrency: 1, useWorkerThreads: true, autorun: false });
      // The sandbox's job.updateProgress reaches this thread as a message of the sandbox's port:
      // the span active there is that of the context the port was made in.
      const activeAtProgress: Array<string | undefined> = [];
      worker.on('progress', () => activeAtProgress.push(trace.getActiveSpan()?.spanContext().spanId));
      let completed = 0;
      const allDone = new Promise<void>((resolveDone) => worker.on('completed', () => ++completed === 3 && resolveDone()));
      for (let i = 0; i < 3; i++) await queue.add('steps', { mode: 'progress' });
      trace.getTracer('app').startActiveSpan('app startup', (span) => {
        void worker.run();
        span.end();
      });
      await allDone;
      await worker.close();
      await queue.close();
      const attempts = spansOf(name, OtelSpanKind.CONSUMER).map((span) => idsOf(span).spanId);
      expect(attempts).toHaveLength(3);
      expect(activated.filter((spanId) => spanId !== undefined && attempts.includes(spanId))).toEqual([]);
      expect(activeAtProgress).toEqual(Array(6).fill(undefined)); // two progress updates a job
    }
  });
});

describe('OpenTelemetry: a Telemetry that throws never costs a job', () => {
  type Faults = { with?: 'before' | 'after'; consumerAttributes?: boolean; resultAttributes?: boolean };

  /** EchoMQOtel with the calls `faults` names throwing. */
  function faulty(faults: Faults): Telemetry<Context> {
    const otel = new EchoMQOtel('faulty');
    const manager = otel.contextManager;
    return {
      tracer: {
        startSpan(name, options, ctx) {
          const span = otel.tracer.startSpan(name, options, ctx);
          let attributeCalls = 0;
          const wrapped: Span<Context> = {
            setSpanOnContext: (context) => span.setSpanOnContext(context),
            setAttribute: (key, value) => span.setAttribute(key, value),
            setAttributes: (attributes) => {
              attributeCalls++;
              if (faults.consumerAttributes && options?.kind === SpanKind.CONSUMER) throw new Error('setAttributes broke');
              // The producer span's second call: what the add learned, after the write.
              if (faults.resultAttributes && options?.kind === SpanKind.PRODUCER && attributeCalls === 2) throw new Error('setAttributes broke');
              span.setAttributes(attributes);
            },
            addEvent: (name, attributes) => span.addEvent(name, attributes),
            recordException: (exception, time) => span.recordException(exception, time),
            end: () => span.end(),
          };
          return wrapped;
        },
      },
      contextManager: {
        active: () => manager.active(),
        getMetadata: (context) => manager.getMetadata(context),
        fromMetadata: (active, metadata) => manager.fromMetadata(active, metadata),
        with: (context, fn) => {
          if (faults.with === 'before') throw new Error('with broke before running fn');
          if (faults.with === 'after') {
            manager.with(context, fn);
            throw new Error('with broke after running fn');
          }
          return manager.with(context, fn);
        },
      },
    };
  }

  it('contextManager.with throwing before or after it ran the handler: the handler runs once, and the job completes', async () => {
    for (const when of ['before', 'after'] as const) {
      const name = uniqueQueueName(`otel-with-${when}`);
      const queue = new Queue(name, { connection: testConnection() });
      let calls = 0;
      const worker = new Worker(name, async () => {
        calls++;
        return 'done';
      }, { connection: testConnection(), telemetry: faulty({ with: when }) });
      const errors: Error[] = [];
      worker.on('error', (error) => errors.push(error));
      const completed = new Promise<unknown>((resolveDone) => worker.once('completed', (_job, result) => resolveDone(result)));
      const failed = new Promise<unknown>((resolveFailed) => worker.once('failed', (_job, error) => resolveFailed(error)));
      await queue.add('traced', {});
      expect(await Promise.race([completed, failed])).toBe('done');
      await worker.close();
      await queue.close();
      expect(calls).toBe(1);
      expect(errors.map((error) => error.message)).toContain(`with broke ${when} running fn`);
    }
  });

  it('setAttributes throwing as an attempt begins: the attempt runs untraced, and the span started is ended', async () => {
    const name = uniqueQueueName('otel-begin-throws');
    const queue = new Queue(name, { connection: testConnection() });
    const worker = new Worker(name, async () => 'done', { connection: testConnection(), telemetry: faulty({ consumerAttributes: true }) });
    worker.on('error', () => undefined);
    const completed = new Promise<void>((resolveDone) => worker.once('completed', () => resolveDone()));
    await queue.add('traced', {});
    await completed;
    await worker.close();
    await queue.close();
    expect(exporter.getFinishedSpans().filter((span) => span.name === `process ${name}`)).toHaveLength(1);
  });

  it('setAttributes throwing after the add was written: the add answers its job, and the span is ended', async () => {
    const name = uniqueQueueName('otel-add-throws');
    const queue = new Queue(name, { connection: testConnection(), telemetry: faulty({ resultAttributes: true }) });
    const job = await queue.add('written', {});
    expect(await client.hget(queue.keys.job(job.id), 'name')).toBe('written');
    await queue.close();
    expect(exporter.getFinishedSpans().filter((span) => span.name === `add ${name}`)).toHaveLength(1);
  });
});

describe('OpenTelemetry: messaging.batch.message_count', () => {
  it('counts jobs, not trees, and is not set on an add of a single job', async () => {
    const name = uniqueQueueName('otel-count');
    const children = uniqueQueueName('otel-count-child');
    const telemetry = new EchoMQOtel();
    const queue = new Queue(name, { connection: testConnection(), telemetry });
    await queue.addBulk([{ name: 'only', data: 1 }]);
    await queue.close();
    const producer = new FlowProducer({ connection: testConnection(), telemetry });
    const tree = { name: 'parent', queueName: name, children: [{ name: 'page', queueName: children }, { name: 'page', queueName: children }] };
    await producer.addBulk([tree, { name: 'single', queueName: name }]);
    await producer.addBulk([{ name: 'single', queueName: name }]);
    await producer.add(tree);
    await producer.add({ name: 'single', queueName: name });
    await producer.close();
    expect(spansOf(name, OtelSpanKind.PRODUCER).map((span) => [span.name, span.attributes['messaging.batch.message_count']])).toEqual([
      [`addBulk ${name}`, undefined],
      [`addFlows ${name}`, 4],
      [`addFlows ${name}`, undefined],
      [`addFlow ${name}`, 3],
      [`addFlow ${name}`, undefined],
    ]);
  });
});

/** Every package reachable from `entry` through the repository's own relative imports (import type excluded: erased). */
function reachablePackages(entry: string): Set<string> {
  const seen = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    const source = readFileSync(file, 'utf8');
    const specifiers = [...source.matchAll(/^\s*(?:import|export)\s+(?!type\b)[^'"]*?from\s+'([^']+)'/gm), ...source.matchAll(/import\(\s*'([^']+)'\s*\)/g)].map((match) => match[1]);
    for (const specifier of specifiers) {
      if (specifier.startsWith('.')) visit(resolve(dirname(file), specifier.replace(/\.js$/, '.ts')));
      else packages.add(specifier);
    }
  };
  visit(fileURLToPath(new URL(entry, import.meta.url)));
  return packages;
}
