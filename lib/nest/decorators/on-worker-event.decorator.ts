import type { WorkerEvents } from '../../runtime/worker/worker-events.js';
import { WORKER_EVENT_METADATA } from '../echomq.constants.js';
import { appendMetadata } from './process.decorator.js';

/** The worker events a processor method can listen to. */
export type WorkerEventName = keyof WorkerEvents;

/** Calls the method on a worker event of its processor's queue, with the event's arguments: `@OnWorkerEvent('completed')`. */
export function OnWorkerEvent(event: WorkerEventName): MethodDecorator {
  return (_target, _key, descriptor) => {
    appendMetadata(WORKER_EVENT_METADATA, descriptor.value as object, event);
    return descriptor;
  };
}
