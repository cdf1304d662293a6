import type { ChainableCommander } from 'ioredis';
import { EchoMQOptionError } from '../../protocol/errors.js';
import { describe } from '../../protocol/names.js';
import type { RedisClient } from '../../protocol/script.js';
import type { Scripts } from '../../protocol/scripts.js';
import { assertRenewBelowLock } from '../core/option-numbers.js';
import type {
  HeartbeatErrorEvent, HeartbeatLateEvent, JobCancelledEvent, LockAcquiredEvent, LockReleasedEvent,
  LockRenewalFailedEvent, LockRenewedEvent,
} from './lock-events.js';

// What a worker gives the LockManager when it registers, and what the LockManager gives back.

/** What a worker tells the LockManager about itself when it registers. */
export interface LockHolder {
  workerId: string;
  queue: string;
  scripts: Scripts;
  /** The connection the worker's scripts use: its renewals go on a duplicate of it. */
  client: RedisClient;
  /** The lock TTL (ms) each renewal sets. */
  lockDuration: number;
  /** The heartbeat interval (ms); must be below lockDuration unless `allowLapsingRenewTime`. */
  lockRenewTime: number;
  /** A tick this many ms late is reported on heartbeatLate$. */
  heartbeatLateThreshold: number;
  /** Demos and tests only: accept lockRenewTime >= lockDuration, so locks lapse on purpose. */
  allowLapsingRenewTime?: boolean;
}

/** The sinks a WorkerLocks reports to (the LockManager's subjects). */
export interface LockEmitter {
  /** True while someone subscribes to that kind: the per-job events are built only then. */
  observed(kind: 'acquired' | 'released'): boolean;
  acquired(event: LockAcquiredEvent): void;
  released(event: LockReleasedEvent): void;
  renewed(event: LockRenewedEvent): void;
  renewalFailed(event: LockRenewalFailedEvent): void;
  heartbeatLate(event: HeartbeatLateEvent): void;
  heartbeatError(event: HeartbeatErrorEvent): void;
  cancelled(event: JobCancelledEvent): void;
}

/**
 * Commands that ride in a worker's heartbeat tick, after its renewals and in the same pipeline (no
 * round trip of their own): the worker's registry entry and the read of the queue's limits. While
 * one rides, the tick runs whether or not the worker holds a job.
 */
export interface TickPassenger {
  /** Queues its commands on the tick's pipeline. */
  board(pipeline: ChainableCommander): void;
  /** Their replies, in order; or the error that cost the whole tick (it keeps what it knew). */
  arrive(replies: Array<[Error | null, unknown]> | Error): void;
}

/** Checks a holder's timing against PROTOCOL.md's rules; throws EchoMQOptionError naming the field. */
export function validateHolder(holder: LockHolder): void {
  const { lockDuration, lockRenewTime, heartbeatLateThreshold } = holder;
  if (!Number.isInteger(lockDuration) || lockDuration <= 0) throw new EchoMQOptionError('lockDuration', `must be a whole number of ms above 0, got ${describe(lockDuration)}`);
  if (!Number.isInteger(lockRenewTime) || lockRenewTime <= 0) throw new EchoMQOptionError('lockRenewTime', `must be a whole number of ms above 0, got ${describe(lockRenewTime)}`);
  if (!holder.allowLapsingRenewTime) assertRenewBelowLock(lockDuration, lockRenewTime);
  if (typeof heartbeatLateThreshold !== 'number' || !(heartbeatLateThreshold > 0)) {
    throw new EchoMQOptionError('heartbeatLateThreshold', `must be a number of ms above 0, got ${describe(heartbeatLateThreshold)}`);
  }
}
