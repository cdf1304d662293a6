/**
 * @echomq/nestjs: the public face, an explicit list. The runtime (Queue, Worker, Job, QueueEvents,
 * LockManager), its errors and option and event types, the Nest integration, and for tools the key
 * layout (Keys) and the protocol's return codes. The machinery behind them (Scripts, the job
 * runner, connection and option helpers) is not part of it: tools that need it import
 * `@echomq/nestjs/internal` (lib/internal.ts), which carries no compatibility promise.
 */

// The protocol, as tools need it: where the keys are and what the codes mean.
export { Keys, DEFAULT_PREFIX, type JobState } from './protocol/keys.js';
export { ErrorCode, codeName, codeMeaning, type ErrorCodeValue } from './protocol/codes.js';
export { EchoMQError, EchoMQOptionError } from './protocol/errors.js';
export type { RedisClient } from './protocol/script.js';
export type { RateLimit } from './protocol/script-shapes.js';
export type { Metrics, MetricsType } from './protocol/metrics.js';

// The runtime.
export { Queue, type JobCounts } from './runtime/queue/queue.js';
export { CloseTimeoutError } from './runtime/core/close-timeout-error.js';
export { Worker } from './runtime/worker/worker.js';
export type { BackoffStrategy, MetricsOptions, ResolvedWorkerOptions, WorkerConstructorOptions, WorkerOptions, WorkerSettings } from './runtime/worker/worker-options.js';
export type { WorkerEvents, WorkerState } from './runtime/worker/worker-events.js';
export { Job } from './runtime/job/job.js';
export { CorruptJobError, JobNotFoundError } from './runtime/job/job-errors.js';
export type { JobStateName, JobStateOrUnknown, JobStatus } from './runtime/job/job-state.js';
export type { ProcessorContext, ProcessorFunction } from './runtime/queue/processor.js';
export type { SandboxedContext, SandboxedJob, SandboxedProcessor } from './runtime/sandbox/sandboxed-job.js';
export type { WorkerThreadsOptions } from './runtime/sandbox/sandbox-options.js';
export {
  QueueEvents,
  type QueueEvent,
  type QueueEventName,
  type QueueEventsListeners,
  type WithPartition,
} from './runtime/events/queue-events.js';
export { LockManager, LockLostError, type LockManagerOptions } from './runtime/locks/lock-manager.js';
export {
  forQueue,
  forWorker,
  type HeartbeatErrorEvent,
  type HeartbeatLateEvent,
  type JobCancelledEvent,
  type JobStalledEvent,
  type LockAcquiredEvent,
  type LockEvent,
  type LockEventBase,
  type LockReleasedEvent,
  type LockRenewalFailedEvent,
  type LockRenewedEvent,
} from './runtime/locks/lock-events.js';
export type { BackoffOptions, DeduplicationOptions, JobOptions, JobsOptions, KeepJobs, ParentFailureOptions, ParentOptions } from './runtime/core/job-options.js';
export type { QueueEventsOptions, QueueOptions, ResolvedQueueOptions } from './runtime/core/queue-options.js';
export type { ConnectionInput } from './runtime/core/connection.js';
export { RedisFullError, RedisVersionError } from './runtime/core/redis-health.js';
export { UnrecoverableError } from './runtime/core/unrecoverable-error.js';
export { RateLimitError } from './runtime/core/rate-limit-error.js';
export type { WorkerInfo } from './protocol/queue-limits.js';
export { DelayedError } from './runtime/core/delayed-error.js';
export { WaitingChildrenError } from './runtime/core/waiting-children-error.js';
export type { RemoveOptions, WaitingChildrenOptions } from './runtime/job/job-context.js';
export { JobTimeoutError } from './runtime/core/job-timeout-error.js';
export { JobCancelledError } from './runtime/core/job-cancelled-error.js';
export type { PriorityChange } from './runtime/job/job-control.js';
export type { PromoteJobsOptions, RetryJobsOptions } from './runtime/queue/queue-job-control.js';
export type { JobLogs } from './runtime/queue/queue-job-records.js';
export type { QueueMeta } from './runtime/queue/queue-limits.js';
export type { QueueListener } from './runtime/queue/queue-listener.js';
export type { JobSchedulerJson } from './runtime/schedulers/job-schedulers.js';
export { FlowProducer, type FlowProducerOptions, type JobNode } from './runtime/flows/flow-producer.js';
export type { FlowJob, FlowJobOptions } from './runtime/flows/flow-tree.js';
export type { FlowTreeNode, GetFlowOptions } from './runtime/flows/flow-reader.js';
export type { Dependencies, DependenciesCount } from './runtime/job/dependencies.js';
export type { RepeatOptions } from './runtime/schedulers/repeat-options.js';
// Tracing: the interface a `telemetry` option takes (EchoMQOtel, from @echomq/nestjs/otel, implements it).
export {
  SpanKind,
  type Attributes,
  type AttributeValue,
  type ContextManager,
  type Exception,
  type JobTelemetryOptions,
  type Span,
  type SpanOptions,
  type Telemetry,
  type Time,
  type Tracer,
} from './runtime/core/telemetry.js';
export type { JobSchedulerTemplate, JobSchedulerTemplateOptions } from './runtime/schedulers/template.js';

// The Nest integration.
export {
  DEFAULT_CONFIG_KEY,
  EchoMQModule,
  InjectFlowProducer,
  InjectQueue,
  JobScheduler,
  OnQueueEvent,
  OnWorkerEvent,
  Process,
  Processor,
  QueueEventsHost,
  QueueEventsListener,
  WorkerHost,
  WorkerOrchestrator,
  getConfigToken,
  getFlowProducerToken,
  getQueueToken,
  type QueueEventsListenerName,
  type QueueEventsListenerOptions,
  type WorkerEventName,
} from './nest/index.js';
export type * from './nest/echomq.interfaces.js';
