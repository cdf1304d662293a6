/**
 * @echomq/nestjs/otel: EchoMQ's tracing on OpenTelemetry (docs/observability.md, "OpenTelemetry").
 * Its own entry so that `@opentelemetry/api`, an optional peer dependency, is loaded only by apps
 * that import it: the core entry (lib/index.ts) never does. The Telemetry interface it implements
 * is the core's (`import type { Telemetry } from '@echomq/nestjs'`).
 */
export { EchoMQOtel } from './echomq-otel.js';
