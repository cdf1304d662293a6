import { Injectable } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import type { QueueEventsListenerMetadata, QueueEventsListenerName } from './decorators/queue-events-listener.decorator.js';
import { EchoMQMetadataAccessor } from './echomq-metadata.accessor.js';
import { SCOPED_QUEUE_EVENTS_LISTENER } from './echomq.messages.js';

/** One @QueueEventsListener class as found: its one instance and which methods take which events. */
export interface QueueEventsListenerDefinition {
  metadata: QueueEventsListenerMetadata;
  className: string;
  instance: Record<string, unknown>;
  events: Array<{ event: QueueEventsListenerName; method: string }>;
}

/** Finds the @QueueEventsListener providers and their @OnQueueEvent methods. */
@Injectable()
export class QueueEventsExplorer {
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly accessor: EchoMQMetadataAccessor,
  ) {}

  /** Every listener of the app; call once the providers are instantiated (bootstrap). */
  find(): QueueEventsListenerDefinition[] {
    const found = new Map<object, QueueEventsListenerDefinition>();
    for (const wrapper of this.discovery.getProviders()) {
      const candidates = [wrapper.metatype, (wrapper.instance as object | undefined)?.constructor];
      const metatype = candidates.find((c): c is Function => typeof c === 'function' && this.accessor.queueEventsListener(c) !== undefined);
      if (!metatype) continue;
      // One instance gets every event: a scoped one would have none made, or one per request.
      if (!wrapper.isNotMetatype && (wrapper.isTransient || !wrapper.isDependencyTreeStatic())) throw new Error(SCOPED_QUEUE_EVENTS_LISTENER(metatype.name));
      const instance = wrapper.instance as Record<string, unknown> | undefined;
      if (!instance || found.has(instance)) continue; // the same instance exported by two modules
      const events: QueueEventsListenerDefinition['events'] = [];
      for (const method of this.scanner.getAllMethodNames(metatype.prototype)) {
        for (const event of this.accessor.queueEvents(metatype.prototype[method]) ?? []) events.push({ event, method });
      }
      found.set(instance, { metadata: this.accessor.queueEventsListener(metatype)!, className: metatype.name, instance, events });
    }
    return [...found.values()];
  }
}
