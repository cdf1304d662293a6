import { Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown, type OnModuleDestroy } from '@nestjs/common';
import { EchoMQOptionError } from '../protocol/errors.js';
import { LockManager } from '../runtime/locks/lock-manager.js';
import { Worker } from '../runtime/worker/worker.js';
import { ConfigRegistry } from './config.registry.js';
import { EchoMQExplorer, type ProcessorDefinition } from './echomq.explorer.js';
import { FlowProducerRegistry } from './flow-producer.registry.js';
import { attachWorker } from './worker-host.js';
import { INVALID_PROCESSOR_OPTIONS, NOT_INITIALIZED, PROCESSOR_PARTITIONS_MISMATCH, WORKERS_CLOSED } from './echomq.messages.js';
import { ProcessorDispatcher } from './processor.dispatcher.js';
import { QueueRegistry } from './queue.registry.js';
import { SchedulerBootstrap } from './scheduler.bootstrap.js';
import type { Telemetry } from '../runtime/core/telemetry.js';

/**
 * Starts a Worker per @Processor after the app is initialized (and its declared job schedulers
 * are in Redis: SchedulerBootstrap), and stops them on shutdown:
 * first the workers drain (no more fetching; running jobs finish with their locks renewed, and
 * may still add jobs and flows), only then the queues and flow producers, the shared connections and the LockManager close.
 * Also the public handle to start workers by hand (startWorkers: false) and to look them up.
 */
@Injectable()
export class WorkerOrchestrator implements OnApplicationBootstrap, OnModuleDestroy, OnApplicationShutdown {
  private readonly logger = new Logger('EchoMQ');
  private readonly workers = new Map<string, Worker>();
  private closed = false;

  constructor(
    private readonly explorer: EchoMQExplorer,
    private readonly dispatcher: ProcessorDispatcher,
    private readonly configs: ConfigRegistry,
    private readonly queues: QueueRegistry,
    private readonly lockManager: LockManager,
    private readonly schedulers: SchedulerBootstrap,
    private readonly flowProducers: FlowProducerRegistry,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    // Every processor, started now or later by hand: a partition count at odds with its queue's is refused at init.
    for (const definition of this.explorer.definitions) this.partitionsOf(definition);
    // The schedules before any worker: a changed one replaces its old pending jobs, and an undeclared
    // one is removed (removeUndeclaredSchedulers), before a worker of this code could take one.
    await this.schedulers.apply();
    if (this.closed) return; // app.close() came during the upserts
    const automatic = this.explorer.definitions.filter((d) => this.configs.get(d.configKey, `processor ${d.className}`).options.startWorkers !== false);
    for (const definition of automatic) this.start(definition);
  }

  /**
   * Starts the workers not running yet (all, or those of one configuration): for apps that set
   * `startWorkers: false` and decide later. Returns the workers started now.
   */
  startWorkers(configKey?: string): Worker[] {
    if (this.closed) throw new Error(WORKERS_CLOSED());
    if (!this.explorer.ready) throw new Error(NOT_INITIALIZED());
    return this.explorer.definitions
      .filter((d) => (configKey === undefined || d.configKey === configKey) && !this.workers.has(d.queueName))
      .map((d) => this.start(d));
  }

  /** The running worker of a queue, if one was started. */
  getWorker(queueName: string): Worker | undefined {
    return this.workers.get(queueName);
  }

  /** Every worker started, by queue name. */
  getWorkers(): ReadonlyMap<string, Worker> {
    return this.workers;
  }

  /**
   * Drains the workers: they stop fetching and finish their running jobs, each within its
   * closeTimeout (past it a worker gives its jobs up and logs a CloseTimeoutError), so a Redis
   * that stops answering cannot hold app.close() forever.
   */
  async onModuleDestroy(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.workers.values()].map((worker) => worker.close()));
  }

  /** After the workers: the queues and flow producers, then the shared connections, then the LockManager's streams. */
  async onApplicationShutdown(): Promise<void> {
    await this.onModuleDestroy();
    await Promise.all([this.queues.close(), this.flowProducers.close()]);
    await this.configs.close();
    await this.lockManager.close();
  }

  /**
   * The worker's partition count: the registered queue's (on the processor's configuration), which
   * a count on @Processor may repeat but not contradict; else the decorator's, else 1.
   */
  private partitionsOf(definition: ProcessorDefinition): number | undefined {
    const registered = this.queues.registration(definition.queueName);
    if (registered === undefined || registered.configKey !== definition.configKey) return definition.partitions;
    const { partitions } = registered.queue;
    if (definition.partitions !== undefined && definition.partitions !== partitions) {
      throw new EchoMQOptionError('partitions', PROCESSOR_PARTITIONS_MISMATCH(definition.className, definition.queueName, definition.partitions, partitions));
    }
    return partitions;
  }

  /**
   * The worker's tracing: its @Processor's own, else its queue's registration's own (on the same
   * configuration; not the queue's, which fell back to the configuration's), else the
   * configuration's worker default, else the configuration's: the option reaches every worker the
   * module makes (what @nestjs/bullmq missed, nestjs/bull#2524). The first that is set wins, and
   * `null` there means none.
   */
  private telemetryOf(definition: ProcessorDefinition): Telemetry | undefined {
    const { options } = this.configs.get(definition.configKey, `processor ${definition.className}`);
    const registered = this.queues.registration(definition.queueName);
    const queueTelemetry = registered?.configKey === definition.configKey ? registered.telemetry : undefined;
    const chosen = [definition.workerOptions.telemetry, queueTelemetry, options.worker?.telemetry, options.telemetry].find((setting) => setting !== undefined);
    return chosen ?? undefined;
  }

  private start(definition: ProcessorDefinition): Worker {
    const existing = this.workers.get(definition.queueName);
    if (existing) return existing;
    const { options, client } = this.configs.get(definition.configKey, `processor ${definition.className}`);
    const partitions = this.partitionsOf(definition);
    let worker: Worker;
    try {
      // A root partitionConcurrency is a default for partitioned queues: a plain queue's worker refuses it.
      const { partitionConcurrency: rootBound, ...rootWorker } = options.worker ?? {};
      const { sandbox } = definition;
      worker = new Worker(definition.queueName, sandbox ? sandbox.file : this.dispatcher.processorFor(definition), {
        ...rootWorker,
        ...((partitions ?? 1) > 1 && rootBound !== undefined ? { partitionConcurrency: rootBound } : {}),
        ...definition.workerOptions,
        ...(sandbox ? { useWorkerThreads: sandbox.useWorkerThreads, sandboxGracePeriod: sandbox.gracePeriod, workerThreadsOptions: sandbox.workerThreadsOptions } : {}),
        partitions,
        telemetry: this.telemetryOf(definition),
        connection: client,
        prefix: options.prefix,
        lockManager: this.lockManager,
        autorun: false,
      });
    } catch (error) {
      throw new Error(INVALID_PROCESSOR_OPTIONS(definition.className, (error as Error).message));
    }
    worker.on('error', (error) => this.logger.error(`worker of queue "${definition.queueName}" (${definition.className}): ${error.message}`, error.stack));
    this.dispatcher.bindEvents(definition, worker);
    definition.worker = worker;
    if (definition.host && !definition.scoped) attachWorker(definition.wrapper.instance as object, worker);
    this.workers.set(definition.queueName, worker);
    worker.run().catch((error: Error) => this.logger.error(`worker of queue "${definition.queueName}" stopped: ${error.message}`, error.stack));
    return worker;
  }
}
