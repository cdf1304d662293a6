/**
 * @echomq/nestjs/terminus: a health indicator for @nestjs/terminus (an optional peer dependency:
 * only this entry loads it, never the main one). docs/observability.md, "Health (Terminus)".
 */
export { EchoMQHealthIndicator } from './echomq-health.indicator.js';
export { EchoMQHealthModule } from './echomq-health.module.js';
export type { EchoMQHealthOptions } from './health-options.js';
export type { QueueHealth } from './queue-health.js';
