import { Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { EchoMQOptionError } from '../protocol/errors.js';
import { QueueEvents } from '../runtime/events/queue-events.js';
import { ConfigRegistry } from './config.registry.js';
import { DEFAULT_CONFIG_KEY } from './echomq.constants.js';
import { QUEUE_EVENTS_LISTENER_PARTITIONS_MISMATCH } from './echomq.messages.js';
import { QueueEventsExplorer, type QueueEventsListenerDefinition } from './queue-events.explorer.js';
import { bindQueueEvents } from './queue-events.host.js';
import { QueueRegistry } from './queue.registry.js';

/**
 * Gives each @QueueEventsListener class a QueueEvents of its own (one reading connection, a
 * duplicate of its configuration's), calls its @OnQueueEvent methods, and closes it at shutdown,
 * after the workers have drained (their last events still arrive). An app without listeners
 * opens nothing.
 */
@Injectable()
export class QueueEventsOrchestrator implements OnModuleInit, OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('EchoMQ');
  private listeners: Array<{ definition: QueueEventsListenerDefinition; partitions: number | undefined }> = [];
  private readonly running: QueueEvents[] = [];
  private closed = false;

  constructor(
    private readonly explorer: QueueEventsExplorer,
    private readonly configs: ConfigRegistry,
    private readonly queues: QueueRegistry,
  ) {}

  /** Finds the listeners and checks them (scope, partition count) before anything is opened for them. */
  onModuleInit(): void {
    this.listeners = this.explorer.find().map((definition) => ({
      definition,
      partitions: this.partitionsOf(definition, definition.metadata.configKey ?? DEFAULT_CONFIG_KEY),
    }));
  }

  /**
   * Starts every listener and resolves once each reads its stream: an event written after
   * app.init() resolved reaches the listeners. (While Redis does not answer, init waits for it.)
   */
  async onApplicationBootstrap(): Promise<void> {
    const started = this.listeners.map(({ definition, partitions }) => this.start(definition, partitions));
    await Promise.all(started.map((events) => events.waitUntilReady()));
  }

  async onApplicationShutdown(): Promise<void> {
    this.closed = true;
    await Promise.all(this.running.splice(0).map((events) => events.close()));
  }

  private start(definition: QueueEventsListenerDefinition, partitions: number | undefined): QueueEvents {
    const { metadata, className, instance } = definition;
    const configKey = metadata.configKey ?? DEFAULT_CONFIG_KEY;
    const { options, client } = this.configs.get(configKey, `@QueueEventsListener ${className}`);
    const events = new QueueEvents(metadata.queueName, {
      connection: client,
      prefix: options.prefix,
      blockingTimeout: metadata.blockingTimeout,
      partitions,
      autorun: false,
    });
    bindQueueEvents(instance, events);
    for (const { event, method } of definition.events) {
      (events.on as (name: string, listener: (...args: unknown[]) => void) => unknown).call(events, event, (...args: unknown[]) => this.call(definition, method, args));
    }
    // Read failures are retried by QueueEvents; without a listener of its own they are logged here.
    if (!definition.events.some(({ event }) => event === 'error')) {
      events.on('error', (error) => this.logger.error(`queue events of "${metadata.queueName}" (${className}): ${error.message}`, error.stack));
    }
    if (!this.closed) this.running.push(events);
    return events;
  }

  /** Calls a listener method; what it throws or rejects with is logged, never left unhandled. */
  private call(definition: QueueEventsListenerDefinition, method: string, args: unknown[]): void {
    const where = `${definition.className}.${method} (queue "${definition.metadata.queueName}")`;
    const report = (error: unknown) => this.logger.error(`${where} threw: ${(error as Error)?.message ?? String(error)}`, (error as Error)?.stack);
    try {
      const result = (definition.instance[method] as (...a: unknown[]) => unknown).apply(definition.instance, args);
      if (result instanceof Promise) result.catch(report);
    } catch (error) {
      report(error);
    }
  }

  /** The listener's count, the registered queue's (which it may repeat but not contradict), else 1. */
  private partitionsOf({ metadata, className }: QueueEventsListenerDefinition, configKey: string): number | undefined {
    const registered = this.queues.registration(metadata.queueName);
    if (registered === undefined || registered.configKey !== configKey) return metadata.partitions;
    const { partitions } = registered.queue;
    if (metadata.partitions !== undefined && metadata.partitions !== partitions) {
      throw new EchoMQOptionError('partitions', QUEUE_EVENTS_LISTENER_PARTITIONS_MISMATCH(className, metadata.queueName, metadata.partitions, partitions));
    }
    return partitions;
  }
}
