import type { InjectionToken, ModuleMetadata, OptionalFactoryDependency, Provider, Scope, Type } from '@nestjs/common';
import type { ConnectionInput } from '../runtime/connection.js';
import type { JobOptions, QueueOptions, WorkerOptions } from '../runtime/options.js';

/** The worker settings a root configuration or a @Processor may set (runtime defaults otherwise). */
export type WorkerDefaults = Pick<WorkerOptions,
  'concurrency' | 'lockDuration' | 'lockRenewTime' | 'stalledInterval' | 'maxStalledCount' |
  'drainDelay' | 'limiter' | 'heartbeatLateThreshold' | 'maxEvents' | 'closeTimeout' | 'partitionConcurrency'>;

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
 * Per-queue settings; connection and prefix come from the queue's configuration. `partitions`
 * spreads the queue over that many hash tags (docs/cluster.md); its @Processor's worker takes the
 * same count.
 */
export type QueueSettings = Pick<QueueOptions, 'defaultJobOptions' | 'maxEvents' | 'maxDataSize' | 'partitions'>;

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
}
