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
export type { RateLimit } from './protocol/scripts.js';

// The runtime.
export { Queue, type JobCounts } from './runtime/queue/queue.js';
export { CloseTimeoutError } from './runtime/worker/close-timeout-error.js';
export { Worker, type WorkerConstructorOptions, type WorkerEvents, type WorkerState } from './runtime/worker/worker.js';
export { Job, CorruptJobError, JobNotFoundError } from './runtime/queue/job.js';
export type { JobStateName, JobStateOrUnknown } from './runtime/queue/job-state.js';
export type { ProcessorContext, ProcessorFunction } from './runtime/worker/job-runner.js';
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
  type JobStalledEvent,
  type LockAcquiredEvent,
  type LockEvent,
  type LockEventBase,
  type LockReleasedEvent,
  type LockRenewalFailedEvent,
  type LockRenewedEvent,
} from './runtime/locks/lock-events.js';
export type {
  BackoffOptions,
  JobOptions,
  KeepJobs,
  QueueEventsOptions,
  QueueOptions,
  ResolvedQueueOptions,
  ResolvedWorkerOptions,
  WorkerOptions,
} from './runtime/options.js';
export type { ConnectionInput } from './runtime/connection.js';
export { RedisFullError, RedisVersionError } from './runtime/redis-health.js';
export { UnrecoverableError } from './runtime/worker/unrecoverable-error.js';

// The Nest integration.
export {
  DEFAULT_CONFIG_KEY,
  EchoMQModule,
  InjectQueue,
  OnWorkerEvent,
  Process,
  Processor,
  WorkerOrchestrator,
  getConfigToken,
  getQueueToken,
  type WorkerEventName,
} from './nest/index.js';
export type * from './nest/echomq.interfaces.js';
