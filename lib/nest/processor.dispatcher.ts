import { Injectable, Logger } from '@nestjs/common';
import { ContextIdFactory, ModuleRef } from '@nestjs/core';
import { Job } from '../runtime/job/job.js';
import type { ProcessorContext, ProcessorFunction } from '../runtime/queue/processor.js';
import { UnrecoverableError } from '../runtime/core/unrecoverable-error.js';
import type { Worker } from '../runtime/worker/worker.js';
import type { ProcessorDefinition } from './echomq.explorer.js';
import { NO_HANDLER } from './echomq.messages.js';
import { attachWorker } from './worker-host.js';

type Instance = Record<string, (...args: unknown[]) => unknown>;

/**
 * Turns a processor definition into what a Worker runs: one function that picks the handler by job
 * name, and listeners for the @OnWorkerEvent methods. Scoped processors get a fresh instance per job
 * (and per event), with the job registered as their request. Every user call is wrapped here, once.
 */
@Injectable()
export class ProcessorDispatcher {
  private readonly logger = new Logger('EchoMQ');

  constructor(private readonly moduleRef: ModuleRef) {}

  /** The processor function for a Worker of this definition. */
  processorFor(definition: ProcessorDefinition): ProcessorFunction {
    return async (job: Job, context: ProcessorContext) => {
      const method = definition.handlers.get(job.name) ?? definition.defaultHandler;
      if (method === undefined) {
        // Retrying cannot grow a handler: fail for good, naming what is missing.
        throw new UnrecoverableError(NO_HANDLER(job.name, definition.className, definition.queueName, [...definition.handlers.keys()]));
      }
      const instance = await this.instanceFor(definition, job);
      // A WorkerHost's process takes the lock token, as @nestjs/bullmq's does; @Process methods the context.
      return definition.host && method === 'process' ? instance[method](job, context.token) : instance[method](job, context);
    };
  }

  /** Subscribes the definition's @OnWorkerEvent methods to the worker; an error in one is logged, never thrown. */
  bindEvents(definition: ProcessorDefinition, worker: Worker): void {
    for (const { event, method } of definition.events) {
      worker.on(event, (...args: unknown[]) => {
        void this.callEvent(definition, method, args).catch((error: Error) => {
          this.logger.error(`@OnWorkerEvent('${event}') ${definition.className}.${method} threw: ${error?.message ?? error}`, error?.stack);
        });
      });
    }
  }

  private async callEvent(definition: ProcessorDefinition, method: string, args: unknown[]): Promise<void> {
    const job = args[0] instanceof Job ? args[0] : undefined;
    const instance = await this.instanceFor(definition, job);
    await instance[method](...args);
  }

  private async instanceFor(definition: ProcessorDefinition, job: Job | undefined): Promise<Instance> {
    if (!definition.scoped) return definition.wrapper.instance as Instance;
    const contextId = ContextIdFactory.create();
    this.moduleRef.registerRequestByContextId(job ?? {}, contextId);
    const instance = await this.moduleRef.resolve<Instance>(definition.wrapper.token, contextId, { strict: false });
    if (definition.host && definition.worker) attachWorker(instance, definition.worker);
    return instance;
  }
}
