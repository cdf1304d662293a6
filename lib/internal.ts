/**
 * @echomq/nestjs/internal: the machinery behind the public face (lib/index.ts), for the
 * repository's own tools (benchmarks, the fault-injection harness, tests) and for tools that speak
 * the protocol directly. None of it carries a compatibility promise: it changes with the
 * implementation, without a major version. An explicit list, like the public face; what is public
 * is imported from `@echomq/nestjs`.
 */

// The protocol: every Lua script by EVALSHA, the key names, the id and name rules.
export { Scripts } from './protocol/scripts.js';
export { ADD_BATCH, SCRIPTS, type ScriptName } from './protocol/script-registry.js';
export { PICKUP_KEYS, type Finish, type LockFailure, type NewJob, type Pickup, type Retry, type SweepResult } from './protocol/script-shapes.js';
export { parseLockFailures, parsePickup } from './protocol/script-replies.js';
export { Script, isNoScript, runPipelined, type ScriptCall } from './protocol/script.js';
export type { ScriptArg } from './protocol/script-command.js';
export { SchedulerScripts, type SlotPair, type StartVerdict, type StoredScheduler } from './protocol/scheduler-scripts.js';
export { JobControlScripts, MAX_MOVE_BATCH, type CancelOutcome } from './protocol/job-control-scripts.js';
export { parseSchedulerJobId, schedulerJobId } from './protocol/scheduler-ids.js';
export { isErrorCode } from './protocol/codes.js';
export { QUEUE_KEY_NAMES, type QueueKeyName } from './protocol/keys.js';
export {
  MAX_JOB_ID_LENGTH,
  MAX_QUEUE_NAME_LENGTH,
  assertCustomJobId,
  assertPrefix,
  assertQueueName,
} from './protocol/names.js';

// The runtime's parts and helpers.
export { DEFAULTS } from './runtime/core/defaults.js';
export { resolveWorkerOptions } from './runtime/worker/worker-options.js';
export { assertRenewBelowLock } from './runtime/core/option-numbers.js';
export { backoffDelay, keepRule, validateJobOptions } from './runtime/core/job-options.js';
export { resolveQueueEventsOptions, resolveQueueOptions, type ResolvedQueueEventsOptions } from './runtime/core/queue-options.js';
export { JOB_STATES, getJobState, parseJobState, parseJobStates } from './runtime/job/job-state.js';
export { canNameJob } from './runtime/job/job.js';
export type { JobContext } from './runtime/job/job-context.js';
export { JobRunner } from './runtime/worker/job-runner.js';
export type { ActiveJob, RunnerEvents } from './runtime/worker/job-runner-options.js';
// A worker's sandboxes (tests count them), and the execArgv a child sandbox gets.
export { sandboxPoolOf } from './runtime/worker/worker.js';
export type { SandboxPool } from './runtime/sandbox/sandbox-pool.js';
export { childExecArgv } from './runtime/sandbox/sandbox-channel.js';
export { RENEWAL_CHUNK, WorkerLocks, validateHolder, type JobLock, type LockHolder } from './runtime/locks/lock-manager.js';
export { closeClient, connect, connectBlocking, dropClient, isClient, type OwnedClient } from './runtime/core/connection.js';
export { MIN_REDIS_VERSION, evictionPolicyWarning, explainRedisError, redisVersionError } from './runtime/core/redis-health.js';
export { FINISH_EVENT_SCAN } from './runtime/job/wait-until-finished.js';
export { firstSlots, slotAfter, slotsAfter, slotsAfterRun } from './runtime/schedulers/next-slot.js';
export { parseRepeatOptions, scheduleJson, type Schedule } from './runtime/schedulers/repeat-options.js';
export { REPAIR_BATCH, REPAIR_GRACE_MS, SchedulerChain } from './runtime/schedulers/scheduler-chain.js';
