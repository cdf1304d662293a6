import { EchoMQOptionError } from '../../protocol/errors.js';
import { assertPrefix, describe } from '../../protocol/names.js';
import { DEFAULTS } from './defaults.js';
import { MAX_TIMER_MS } from './sleeper.js';

// The checks the option resolvers share: each number option is a whole number (or a number) in its
// range, else an EchoMQOptionError naming its field.

export function prefixOf(prefix: string | undefined): string {
  if (prefix === undefined) return DEFAULTS.prefix;
  assertPrefix(prefix);
  return prefix;
}

export function positiveInt(value: number | undefined, field: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value <= 0) throw new EchoMQOptionError(field, `must be a whole number above 0, got ${describe(value)}`);
  return value;
}

export function nonNegativeInt(value: number | undefined, field: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 0) throw new EchoMQOptionError(field, `must be a whole number of 0 or more, got ${describe(value)}`);
  return value;
}

export function positiveNumber(value: number | undefined, field: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new EchoMQOptionError(field, `must be a number above 0, got ${describe(value)}`);
  }
  return value;
}

/** A timeout: a whole number of ms above 0 that a timer can hold. */
export function timeoutOf(value: unknown, field: string): number {
  const ms = positiveInt(value as number, field, 1);
  if (ms > MAX_TIMER_MS) throw new EchoMQOptionError(field, `is ${ms} ms; the longest is ${MAX_TIMER_MS} (about 24.8 days)`);
  return ms;
}

/** worker.rateLimit's argument: a whole number of ms above 0 that a timer can hold. */
export function assertRateLimitMs(ms: unknown): asserts ms is number {
  if (!Number.isInteger(ms) || (ms as number) <= 0 || (ms as number) > MAX_TIMER_MS) {
    throw new EchoMQOptionError('expireTimeMs', `must be a whole number of ms from 1 to ${MAX_TIMER_MS}, got ${describe(ms)}`);
  }
}

/** PROTOCOL.md's rule: a heartbeat at or over the lock's TTL lets every lock lapse. */
export function assertRenewBelowLock(lockDuration: number, lockRenewTime: number): void {
  if (lockRenewTime >= lockDuration) {
    throw new EchoMQOptionError('lockRenewTime', `is ${lockRenewTime} ms but must be below lockDuration (${lockDuration} ms), or every lock lapses before its renewal`);
  }
}
