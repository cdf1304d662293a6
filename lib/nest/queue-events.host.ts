import type { QueueEvents } from '../runtime/events/queue-events.js';

const bound = new WeakMap<object, QueueEvents>();

/**
 * A base class for @QueueEventsListener classes that want their QueueEvents itself (its `events$`
 * observable, its `on`): `this.queueEvents`, set before reading starts.
 */
export abstract class QueueEventsHost {
  get queueEvents(): QueueEvents {
    const events = bound.get(this);
    if (!events) throw new Error(`EchoMQ: ${this.constructor.name}.queueEvents is set at bootstrap, once its QueueEvents is made; it has none yet`);
    return events;
  }
}

/** Gives a host its QueueEvents (the orchestrator's, at bootstrap). */
export function bindQueueEvents(host: object, events: QueueEvents): void {
  bound.set(host, events);
}
