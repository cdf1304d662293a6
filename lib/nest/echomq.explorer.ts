import { Injectable, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import type { InstanceWrapper } from '@nestjs/core/injector/instance-wrapper.js';
import { DEFAULT_CONFIG_KEY } from './echomq.constants.js';
import type { WorkerDefaults } from './echomq.interfaces.js';
import { DUPLICATE_HANDLER, DUPLICATE_PROCESSOR, NO_HANDLERS } from './echomq.messages.js';
import { EchoMQMetadataAccessor } from './echomq-metadata.accessor.js';
import type { WorkerEventName } from './decorators/on-worker-event.decorator.js';

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
}

/** Collects the @Processor providers and their @Process / @OnWorkerEvent methods at module init. */
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
    if (!metatype) return undefined;
    const options = this.accessor.processorOptions(metatype)!;
    const { name, configKey, partitions, scope: _scope, ...workerOptions } = options;
    const className = metatype.name;
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
    };
    const prototype = metatype.prototype;
    for (const method of this.scanner.getAllMethodNames(prototype)) {
      const fn = prototype[method] as Function;
      for (const jobName of this.accessor.jobNames(fn) ?? []) this.addHandler(definition, jobName, method);
      for (const event of this.accessor.workerEvents(fn) ?? []) definition.events.push({ event, method });
    }
    if (definition.handlers.size === 0 && definition.defaultHandler === undefined) throw new Error(NO_HANDLERS(className));
    return definition;
  }

  private addHandler(definition: ProcessorDefinition, jobName: string | undefined, method: string): void {
    const existing = jobName === undefined ? definition.defaultHandler : definition.handlers.get(jobName);
    if (existing !== undefined && existing !== method) throw new Error(DUPLICATE_HANDLER(definition.className, jobName, existing, method));
    if (jobName === undefined) definition.defaultHandler = method;
    else definition.handlers.set(jobName, method);
  }
}
