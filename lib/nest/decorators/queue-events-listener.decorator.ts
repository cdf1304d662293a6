import { Injectable, SetMetadata } from '@nestjs/common';
import type { QueueEventsListeners } from '../../runtime/events/queue-events.js';
import { QUEUE_EVENT_METADATA, QUEUE_EVENTS_LISTENER_METADATA } from '../echomq.constants.js';
import { appendMetadata } from './process.decorator.js';

/** What a @QueueEventsListener class reads: its queue's configuration, and the QueueEvents settings. */
export interface QueueEventsListenerOptions {
  /** The root configuration whose Redis (and prefix) it reads. Default `default`. */
  configKey?: string;
  /** Longest XREAD BLOCK in ms before it is sent again. Default 10,000. */
  blockingTimeout?: number;
  /** The queue's partition count. Default: the registered queue's (registerQueue), else 1; another count is refused at bootstrap. */
  partitions?: number;
}

/** The stored metadata: the queue's name beside the options. */
export interface QueueEventsListenerMetadata extends QueueEventsListenerOptions {
  queueName: string;
}

/** The queue events a method can listen to (`error`: a read failed, or a listener threw). */
export type QueueEventsListenerName = keyof QueueEventsListeners;

/**
 * Marks a provider class as a listener of a queue's events, from every process (the queue's events
 * stream, read by a QueueEvents of its own): `@QueueEventsListener('mail')`, with `@OnQueueEvent`
 * methods. It starts reading at bootstrap and stops at shutdown. Extend QueueEventsHost to reach
 * the QueueEvents itself.
 */
export function QueueEventsListener(queueName: string, options: QueueEventsListenerOptions = {}): ClassDecorator {
  const metadata: QueueEventsListenerMetadata = { ...options, queueName };
  return (target) => {
    Injectable()(target);
    SetMetadata(QUEUE_EVENTS_LISTENER_METADATA, metadata)(target);
  };
}

/**
 * Calls the method on a queue event, with the QueueEvents listener's arguments: `@OnQueueEvent('completed')`
 * gets `({ jobId, returnvalue }, id)`. Stack it to listen to several events.
 */
export function OnQueueEvent(event: QueueEventsListenerName): MethodDecorator {
  return (_target, _key, descriptor) => {
    appendMetadata(QUEUE_EVENT_METADATA, descriptor.value as object, event);
    return descriptor;
  };
}
