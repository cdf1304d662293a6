import { DEFAULT_PREFIX } from '../../protocol/keys.js';
import { DEFAULT_MAX_DATA_BYTES } from './serialize.js';

/** The defaults of every option that has one, in one place: each option's resolver reads its own here. */
export const DEFAULTS = {
  prefix: DEFAULT_PREFIX,
  maxEvents: 10_000,
  maxDataSize: DEFAULT_MAX_DATA_BYTES,
  concurrency: 1,
  lockDuration: 30_000,
  stalledInterval: 30_000,
  maxStalledCount: 1,
  drainDelay: 5,
  // The usual grace a process supervisor gives a stopping process before it kills it
  // (Kubernetes' terminationGracePeriodSeconds, systemd's TimeoutStopSec are both about that).
  closeTimeout: 30_000,
  blockingTimeout: 10_000,
  // The prioritized score is priority * 2^32 + a counter; below 2^21 it stays under 2^53, an exact double.
  maxPriority: 2 ** 21 - 1,
} as const;
