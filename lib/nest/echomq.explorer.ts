import { Injectable, Scope, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import type { InstanceWrapper } from '@nestjs/core/injector/instance-wrapper.js';
import { decoratedScheduler, type DecoratedScheduler } from './decorated-scheduler.js';
import { DEFAULT_CONFIG_KEY } from './echomq.constants.js';
import type { JobSchedulerDeclaration, ProcessorSandbox, WorkerDefaults } from './echomq.interfaces.js';
import {
  DUPLICATE_HANDLER, DUPLICATE_PROCESSOR, NO_HANDLERS, SANDBOX_WITH_HANDLERS, SANDBOX_WITH_SCOPE, SCHEDULER_ON_SANDBOXED, SCHEDULER_OUTSIDE_PROCESSOR,
} from './echomq.messages.js';
import { checkSandbox } from './processor-sandbox.js';
import { EchoMQMetadataAccessor } from './echomq-metadata.accessor.js';
import type { WorkerEventName } from './decorators/on-worker-event.decorator.js';
import type { Worker } from '../runtime/worker/worker.js';
import { WorkerHost } from './worker-host.js';

/** One @Processor class as found: where it is, which methods handle which job names and events. */
export interface ProcessorDefinition {
  queueName: string;
  configKey: string;
  className: string;
  /** The decorated class. */
  target: Function;
  workerOptions: WorkerDefaults;
  /** The decorator's `partitions`, if it gave one (the registered queue's count otherwise). */
  partitions?: number;
  wrapper: InstanceWrapper;
  /** Request- or transient-scoped: resolved afresh for every job. */
  scoped: boolean;
  handlers: Map<string, string>;
  defaultHandler?: string;
  events: Array<{ event: WorkerEventName; method: string }>;
  /** Its @JobScheduler declarations, in method order. */
  schedulers: DecoratedScheduler[];
  /** Its jobs run in this file, in a sandbox, instead of its methods (checked at init). */
  sandbox?: ProcessorSandbox;
  /** It extends WorkerHost: `process(job, token)` is its default handler, and it gets `this.worker`. */
  host: boolean;
  /** Its Worker, once the orchestrator made it (a scoped WorkerHost's instances get it per job). */
  worker?: Worker;
}

/** Collects the @Processor providers and their @Process / @OnWorkerEvent / @JobScheduler methods at module init. */
@Injectable()
export class EchoMQExplorer implements OnModuleInit {
  private found: ProcessorDefinition[] = [];
  private explored = false;

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly accessor: EchoMQMetadataAccessor,
  ) {}

  /** The processors found (empty before module init). */
  get definitions(): readonly ProcessorDefinition[] {
    return this.found;
  }

  /** True once module init has run. */
  get ready(): boolean {
    return this.explored;
  }

  onModuleInit(): void {
    const byQueue = new Map<string, ProcessorDefinition>();
    for (const wrapper of this.discovery.getProviders()) {
      const definition = this.describe(wrapper);
      if (!definition) continue;
      const other = byQueue.get(definition.queueName);
      if (other && other.target !== definition.target) throw new Error(DUPLICATE_PROCESSOR(definition.queueName, other.className, definition.className));
      byQueue.set(definition.queueName, definition);
    }
    this.found = [...byQueue.values()];
    this.explored = true;
  }

  private describe(wrapper: InstanceWrapper): ProcessorDefinition | undefined {
    // A class provider carries the decorator on its metatype; a useFactory / useValue provider on its instance's class.
    const candidates = [wrapper.metatype, (wrapper.instance as object | undefined)?.constructor];
    const metatype = candidates.find((c): c is Function => typeof c === 'function' && this.accessor.processorOptions(c) !== undefined);
    if (!metatype) {
      this.refuseStraySchedulers(candidates);
      return undefined;
    }
    const options = this.accessor.processorOptions(metatype)!;
    const { name, configKey, partitions, scope, sandbox, ...workerOptions } = options;
    const className = metatype.name;
    if (sandbox !== undefined) checkSandbox(className, sandbox);
    if (sandbox !== undefined && scope !== undefined && scope !== Scope.DEFAULT) throw new Error(SANDBOX_WITH_SCOPE(className, Scope[scope] ?? String(scope)));
    const definition: ProcessorDefinition = {
      queueName: name,
      configKey: configKey ?? DEFAULT_CONFIG_KEY,
      className,
      target: metatype,
      workerOptions,
      partitions,
      wrapper,
      scoped: !wrapper.isNotMetatype && (wrapper.isTransient || !wrapper.isDependencyTreeStatic()),
      handlers: new Map(),
      events: [],
      schedulers: [],
      sandbox,
      host: metatype.prototype instanceof WorkerHost,
    };
    const prototype = metatype.prototype;
    const scheduled: Array<{ method: string; jobNames: Array<string | undefined>; declarations: JobSchedulerDeclaration[] }> = [];
    for (const method of this.scanner.getAllMethodNames(prototype)) {
      const fn = prototype[method] as Function;
      const jobNames = this.accessor.jobNames(fn) ?? [];
      for (const jobName of jobNames) this.addHandler(definition, jobName, method);
      for (const event of this.accessor.workerEvents(fn) ?? []) definition.events.push({ event, method });
      const declarations = this.accessor.jobSchedulers(fn);
      if (declarations) scheduled.push({ method, jobNames, declarations });
    }
    // @nestjs/bullmq's shape: every job without a @Process('name') method goes to process().
    if (definition.host) this.addHandler(definition, undefined, 'process');
    const methods = [...new Set([...definition.handlers.values(), ...(definition.defaultHandler === undefined ? [] : [definition.defaultHandler])])];
    if (sandbox !== undefined && methods.length > 0) throw new Error(SANDBOX_WITH_HANDLERS(className, methods));
    if (sandbox !== undefined && scheduled.length > 0) throw new Error(SCHEDULER_ON_SANDBOXED(className, scheduled[0].method, scheduled[0].declarations[0]?.id));
    if (sandbox === undefined && methods.length === 0) throw new Error(NO_HANDLERS(className));
    // After every handler is known: a scheduler's job name must reach its own method.
    for (const { method, jobNames, declarations } of scheduled) {
      for (const declaration of declarations) definition.schedulers.push(decoratedScheduler(definition, method, jobNames, declaration));
    }
    return definition;
  }

  /** A @JobScheduler outside a @Processor class would be ignored without a word: refused instead. */
  private refuseStraySchedulers(candidates: unknown[]): void {
    for (const candidate of new Set(candidates)) {
      const prototype = typeof candidate === 'function' ? (candidate.prototype as Record<string, unknown> | undefined) : undefined;
      if (!prototype) continue;
      for (const method of this.scanner.getAllMethodNames(prototype)) {
        const fn = prototype[method];
        const declarations = typeof fn === 'function' ? this.accessor.jobSchedulers(fn) : undefined;
        if (declarations?.length) throw new Error(SCHEDULER_OUTSIDE_PROCESSOR((candidate as Function).name, method, declarations[0].id));
      }
    }
  }

  private addHandler(definition: ProcessorDefinition, jobName: string | undefined, method: string): void {
    const existing = jobName === undefined ? definition.defaultHandler : definition.handlers.get(jobName);
    if (existing !== undefined && existing !== method) throw new Error(DUPLICATE_HANDLER(definition.className, jobName, existing, method));
    if (jobName === undefined) definition.defaultHandler = method;
    else definition.handlers.set(jobName, method);
  }
}
