export * from './inject-flow-producer.decorator.js';
export * from './inject-queue.decorator.js';
export { JobScheduler } from './job-scheduler.decorator.js';
export * from './on-worker-event.decorator.js';
export { Process } from './process.decorator.js';
export * from './processor.decorator.js';
export { OnQueueEvent, QueueEventsListener, type QueueEventsListenerName, type QueueEventsListenerOptions } from './queue-events-listener.decorator.js';
