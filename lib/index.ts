/**
 * @echomq/nestjs: the public face. The protocol bindings (Keys, Scripts, codes), the runtime
 * (Queue, Job, Worker, QueueEvents, LockManager) and the Nest integration.
 */
export { Keys, DEFAULT_PREFIX, type JobState } from './protocol/keys.js';
export { ErrorCode, codeName, codeMeaning } from './protocol/codes.js';
export { EchoMQError, EchoMQOptionError } from './protocol/errors.js';
export { Scripts, SCRIPTS, type Pickup, type RateLimit, type SweepResult } from './protocol/scripts.js';
export { Script, type RedisClient } from './protocol/script.js';
export * from './runtime/index.js';
export * from './nest/index.js';
