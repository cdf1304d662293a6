import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import type { ProcessorFunction, Telemetry } from '../lib/index.js';

// The package's entries, pinned: a name joins or leaves them on purpose, in this file too.
describe('the public face', () => {
  it('exports exactly what users need, and none of the machinery', async () => {
    expect(Object.keys(await import('../lib/index.js')).sort()).toEqual([
      'CloseTimeoutError', 'CorruptJobError', 'DEFAULT_CONFIG_KEY', 'DEFAULT_PREFIX', 'DelayedError', 'EchoMQError', 'EchoMQModule', 'EchoMQOptionError',
      'ErrorCode', 'FlowProducer', 'InjectFlowProducer', 'InjectQueue', 'Job', 'JobCancelledError', 'JobNotFoundError', 'JobScheduler', 'JobTimeoutError', 'Keys', 'LockLostError', 'LockManager', 'OnQueueEvent', 'OnWorkerEvent',
      'Process', 'Processor', 'Queue', 'QueueEvents', 'QueueEventsHost', 'QueueEventsListener', 'RateLimitError', 'RedisFullError', 'RedisVersionError', 'SpanKind', 'UnrecoverableError',
      'WaitingChildrenError', 'Worker', 'WorkerHost', 'WorkerOrchestrator', 'codeMeaning', 'codeName', 'forQueue', 'forWorker', 'getConfigToken',
      'getFlowProducerToken', 'getQueueToken',
    ]);
  });

  it('is an explicit list: no export * in lib/index.ts', () => {
    expect(readFileSync(new URL('../lib/index.ts', import.meta.url), 'utf8')).not.toMatch(/export \* from/);
  });

  it('Processor is the Nest decorator; the runtime\'s function type is ProcessorFunction', async () => {
    const { Processor } = await import('../lib/index.js');
    expect(typeof Processor('a-queue')).toBe('function'); // a class decorator
    const double: ProcessorFunction<number, number> = (job) => job.data * 2; // compiles only if the type is exported
    expect(typeof double).toBe('function');
  });
});

describe('the internal entry (@echomq/nestjs/internal)', () => {
  it('exports the machinery for tools, and nothing of the public face', async () => {
    const internal = Object.keys(await import('../lib/internal.js')).sort();
    expect(internal).toEqual([
      'ADD_BATCH', 'DEFAULTS', 'FINISH_EVENT_SCAN', 'JOB_STATES', 'JobControlScripts', 'JobRunner', 'MAX_JOB_ID_LENGTH', 'MAX_MOVE_BATCH',
      'MAX_QUEUE_NAME_LENGTH', 'MIN_REDIS_VERSION', 'PICKUP_KEYS', 'QUEUE_KEY_NAMES', 'RENEWAL_CHUNK', 'REPAIR_BATCH', 'REPAIR_GRACE_MS', 'SCRIPTS',
      'SchedulerChain', 'SchedulerScripts', 'Script', 'Scripts', 'WorkerLocks',
      'assertCustomJobId', 'assertPrefix', 'assertQueueName', 'assertRenewBelowLock', 'backoffDelay', 'canNameJob', 'childExecArgv',
      'closeClient', 'connect', 'connectBlocking', 'dropClient', 'evictionPolicyWarning', 'explainRedisError',
      'firstSlots', 'getJobState', 'isClient', 'isErrorCode', 'isNoScript', 'keepRule', 'parseJobState', 'parseJobStates',
      'parseLockFailures', 'parsePickup', 'parseRepeatOptions', 'parseSchedulerJobId', 'redisVersionError',
      'resolveQueueEventsOptions', 'resolveQueueOptions', 'resolveWorkerOptions', 'runPipelined', 'sandboxPoolOf', 'scheduleJson',
      'schedulerJobId', 'slotAfter', 'slotsAfter', 'slotsAfterRun', 'validateHolder', 'validateJobOptions',
    ]);
    const publicNames = new Set(Object.keys(await import('../lib/index.js')));
    expect(internal.filter((name) => publicNames.has(name))).toEqual([]);
  });

  it('is in package.json "exports": ES modules get the ES face, everything else the CommonJS code, each with its types', () => {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { exports: Record<string, unknown> };
    // One copy of the code (dist/cjs); dist/esm re-exports its names (docs/loading.md).
    const entry = (esm: string, cjs: string) => ({
      import: { types: `./dist/esm/${esm}.d.ts`, default: `./dist/esm/${esm}.js` },
      default: { types: `./dist/cjs/lib/${cjs}.d.ts`, default: `./dist/cjs/lib/${cjs}.js` },
    });
    expect(pkg.exports).toEqual({
      '.': entry('index', 'index'),
      './internal': entry('internal', 'internal'),
      // bull-board's adapter: its own entry, so only apps that import it load @bull-board/api (an optional peer).
      './bull-board': entry('bull-board', 'integrations/bull-board/index'),
      './terminus': entry('terminus', 'integrations/terminus/index'),
      './prometheus': entry('prometheus', 'integrations/prometheus/index'),
      // OpenTelemetry: only this entry loads @opentelemetry/api (an optional peer); the core takes any Telemetry.
      './otel': entry('otel', 'integrations/otel/index'),
    });
  });
});

// The integrations' entries: each loads its optional peer, which the public face never does (test/terminus.test.ts).
describe('the integration entries', () => {
  it('@echomq/nestjs/terminus exports the indicator and its module', async () => {
    expect(Object.keys(await import('../lib/integrations/terminus/index.js')).sort()).toEqual(['EchoMQHealthIndicator', 'EchoMQHealthModule']);
  });

  it('@echomq/nestjs/prometheus exports the LockManager collector and the joining of texts', async () => {
    expect(Object.keys(await import('../lib/integrations/prometheus/index.js')).sort()).toEqual(['collectLockMetrics', 'joinPrometheusTexts']);
  });

  it('@echomq/nestjs/otel exports EchoMQOtel, a Telemetry of the core\'s interface', async () => {
    const otel = await import('../lib/integrations/otel/index.js');
    expect(Object.keys(otel).sort()).toEqual(['EchoMQOtel']);
    const telemetry: Telemetry = new otel.EchoMQOtel(); // compiles only if it fits the core's interface
    expect(typeof telemetry.tracer.startSpan).toBe('function');
  });
});
