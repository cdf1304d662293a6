import type { InjectionToken, ModuleMetadata, OptionalFactoryDependency, Provider, Scope, Type } from '@nestjs/common';
import type { ConnectionInput } from '../runtime/core/connection.js';
import type { FlowProducerOptions } from '../runtime/flows/flow-producer.js';
import type { JobOptions } from '../runtime/core/job-options.js';
import type { QueueOptions } from '../runtime/core/queue-options.js';
import type { WorkerOptions } from '../runtime/worker/worker-options.js';
import type { WorkerThreadsOptions } from '../runtime/sandbox/sandbox-options.js';
import type { RepeatOptions } from '../runtime/schedulers/repeat-options.js';
import type { JobSchedulerTemplate } from '../runtime/schedulers/template.js';
import type { Telemetry } from '../runtime/core/telemetry.js';

/**
 * The worker settings a root configuration or a @Processor may set (runtime defaults otherwise);
 * `metrics` turns on the per-minute counts queue.getMetrics reads (docs/observability.md).
 */
export type WorkerDefaults = Pick<WorkerOptions,
  'concurrency' | 'prefetch' | 'lockDuration' | 'lockRenewTime' | 'stalledInterval' | 'maxStalledCount' |
  'drainDelay' | 'limiter' | 'heartbeatLateThreshold' | 'maxEvents' | 'closeTimeout' | 'partitionConcurrency' | 'settings' | 'jobTimeout' |
  'metrics'> & {
  /**
   * The worker's tracing (docs/observability.md, "OpenTelemetry"); `null`: none, whatever the
   * configuration's `telemetry` (the worker's own setting wins over it). Default: docs/nest.md.
   */
  telemetry?: Telemetry | null;
};

/** Options of one root configuration (forRoot / forRootAsync): one Redis, one prefix. */
export interface EchoMQRootOptions {
  /** An ioredis instance (shared, never closed by EchoMQ), ioredis options or a redis:// URL. Default 127.0.0.1:6379. */
  connection?: ConnectionInput;
  /** Key prefix. Default `emq`. */
  prefix?: string;
  /** Options every job added through this configuration's queues starts from. */
  defaultJobOptions?: JobOptions;
  /** Worker defaults for the processors of this configuration; a @Processor's own options win. */
  worker?: WorkerDefaults;
  /** Start this configuration's workers at bootstrap. false: API-only until WorkerOrchestrator.startWorkers(). Default true. */
  startWorkers?: boolean;
  /**
   * Tracing for every Queue, Worker and FlowProducer of this configuration (`new EchoMQOtel()` from
   * `@echomq/nestjs/otel`): a registered queue's, a flow producer's or a @Processor's own `telemetry`
   * wins, and `worker.telemetry` wins for the workers (docs/nest.md). Default none.
   */
  telemetry?: Telemetry;
}

/** A class that builds root options (forRootAsync's useClass / useExisting). */
export interface EchoMQOptionsFactory {
  createEchoMQOptions(): EchoMQRootOptions | Promise<EchoMQRootOptions>;
}

/** What the async registrations share: how their options are built. */
interface AsyncFactory<Options, Factory> extends Pick<ModuleMetadata, 'imports'> {
  useFactory?: (...args: any[]) => Options | Promise<Options>;
  inject?: Array<InjectionToken | OptionalFactoryDependency>;
  useClass?: Type<Factory>;
  useExisting?: InjectionToken;
  /** More providers for the factory's module (what useFactory injects, for instance). */
  extraProviders?: Provider[];
}

/** forRootAsync's options: one of useFactory, useClass or useExisting. */
export interface EchoMQModuleAsyncOptions extends AsyncFactory<EchoMQRootOptions, EchoMQOptionsFactory> {
  /** The name of this configuration. Default `default`. */
  configKey?: string;
}

/**
 * A job scheduler declared in code (@JobScheduler, registerQueue's `schedulers`), with
 * Queue.upsertJobScheduler's arguments: its id, when it runs, and the jobs it makes.
 */
export interface JobSchedulerDeclaration<Data = unknown> {
  id: string;
  repeat: RepeatOptions;
  template?: JobSchedulerTemplate<Data>;
}

/**
 * Per-queue settings; connection and prefix come from the queue's configuration. `partitions`
 * spreads the queue over that many hash tags (docs/cluster.md); its @Processor's worker takes the
 * same count.
 */
export interface QueueSettings extends Pick<QueueOptions, 'defaultJobOptions' | 'maxEvents' | 'maxDataSize' | 'partitions'> {
  /**
   * The queue's tracing, and its processor's worker's (unless the @Processor gives its own):
   * `null` for none, whatever the configuration's `telemetry`. Default: the configuration's.
   * Every registration of one queue gives the same (the same instance, or null, or none).
   */
  telemetry?: Telemetry | null;
  /**
   * Job schedulers of this queue, upserted once at bootstrap before the workers start. Their jobs
   * are named `template.name`, else the scheduler's id (as with queue.upsertJobScheduler).
   */
  schedulers?: JobSchedulerDeclaration[];
  /**
   * At bootstrap, remove the queue's schedulers that neither a registration of it nor a
   * @JobScheduler of its processor declares (made by hand with queue.upsertJobScheduler included).
   * Default false: a schedule removed from the code stays in Redis and keeps making jobs.
   */
  removeUndeclaredSchedulers?: boolean;
}

/** registerQueue's options for one queue. */
export interface RegisterQueueOptions extends QueueSettings {
  name: string;
  /** The root configuration it lives on. Default `default`. */
  configKey?: string;
}

/** A class that builds a queue's settings (registerQueueAsync's useClass / useExisting). */
export interface EchoMQQueueOptionsFactory {
  createQueueOptions(): QueueSettings | Promise<QueueSettings>;
}

/** registerQueueAsync's options: the name is given up front, the settings come from a factory. */
export interface RegisterQueueAsyncOptions extends AsyncFactory<QueueSettings, EchoMQQueueOptionsFactory> {
  name: string;
  configKey?: string;
}

/**
 * A processor's sandbox (docs/sandbox.md): its jobs run in this file's default export, in worker
 * threads or child processes, and the class's methods handle none of them.
 */
export interface ProcessorSandbox {
  /** The processor file: an absolute path or a file: URL (`new URL('./resize.sandbox.js', import.meta.url)`). */
  file: string | URL;
  /** Worker threads (true) or child processes (false). Default false. */
  useWorkerThreads?: boolean;
  /** ms a sandbox may go on after its job's signal aborted, before it is killed (the worker's sandboxGracePeriod). Default 5,000. */
  gracePeriod?: number;
  /** With worker threads: each thread's `resourceLimits` (the worker's workerThreadsOptions). Default Node's. */
  workerThreadsOptions?: WorkerThreadsOptions;
}

/** @Processor's options: the queue, its configuration, worker settings and the provider scope. */
export interface ProcessorOptions extends WorkerDefaults {
  name: string;
  /** The root configuration whose Redis it reads. Default `default`. */
  configKey?: string;
  /**
   * The queue's partition count. Default: the count the queue was registered with
   * (registerQueue), else 1; a count other than the registered queue's is refused at init.
   */
  partitions?: number;
  /** Scope.REQUEST or Scope.TRANSIENT: a fresh instance (with the job as its request) per job. */
  scope?: Scope;
  /**
   * Run every job of the queue in this file, in a sandbox, instead of the class's @Process methods
   * (it may have none; @OnWorkerEvent methods still run, in the app, with its dependencies).
   */
  sandbox?: ProcessorSandbox;
}

/**
 * A registered flow producer's settings; its connection is its configuration's, and so is its
 * prefix unless given here (a flow job's own `prefix` still wins).
 */
export type FlowProducerSettings = Omit<FlowProducerOptions, 'connection' | 'telemetry'> & {
  /** Its tracing; `null` for none, whatever the configuration's `telemetry`. Default: the configuration's. */
  telemetry?: Telemetry | null;
};

/** registerFlowProducer's options for one flow producer (@nestjs/bullmq's shape). */
export interface RegisterFlowProducerOptions extends FlowProducerSettings {
  /** Its name, for @InjectFlowProducer(name). Default `default`. */
  name?: string;
  /** The root configuration it writes to. Default `default`. */
  configKey?: string;
}

/** A class that builds a flow producer's settings (registerFlowProducerAsync's useClass / useExisting). */
export interface EchoMQFlowProducerOptionsFactory {
  createFlowProducerOptions(): FlowProducerSettings | Promise<FlowProducerSettings>;
}

/** registerFlowProducerAsync's options: the name is given up front, the settings come from a factory. */
export interface RegisterFlowProducerAsyncOptions extends AsyncFactory<FlowProducerSettings, EchoMQFlowProducerOptionsFactory> {
  name?: string;
  configKey?: string;
}
