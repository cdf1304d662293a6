export * from './inject-queue.decorator.js';
export * from './on-worker-event.decorator.js';
export { Process } from './process.decorator.js';
export * from './processor.decorator.js';
