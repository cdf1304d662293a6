import type { Keys } from './keys.js';

// The shapes of the calls and replies of the job scripts' bindings (scripts.ts): what a caller
// builds and what a reply is parsed into.

/**
 * The eleven pickup KEYS that moveToActive-11, moveToFinished-14 and finishJobs-13 open with, in
 * their fixed order: the one place the TypeScript side lists them. `lua-src/includes/pickupKeys.lua`
 * reads them in the same order (a test compares the two).
 */
export const PICKUP_KEYS = [
  'wait', 'active', 'prioritized', 'events', 'stalled', 'limiter', 'delayed', 'paused', 'meta', 'pc', 'marker',
] as const satisfies ReadonlyArray<keyof Keys>;

/** What a pickup (moveToActive-11, or fetch-next in moveToFinished-14) answered. */
export interface Pickup {
  /** The job taken into active, or undefined when none was. */
  job?: { id: string; fields: string[] };
  /** When the next delayed job is due (ms timestamp), or 0. */
  nextDelayedAt: number;
  /** How long the rate limiter holds pickups back (ms), or 0. */
  rateLimitedFor: number;
  /** True when moveToActiveBounded-11 took nothing because active held maxActive jobs. */
  atBound?: boolean;
}

export interface RateLimit {
  max: number;
  duration: number;
}

export interface NewJob {
  customId?: string;
  name: string;
  data: string;
  opts: string;
  timestamp: number;
  delay: number;
  priority: number;
  lifo: boolean;
  /** Set only for an add with deduplication (docs/deduplication.md); a plain add's call is as it always was. */
  deduplication?: NewJobDeduplication;
}

/** A job's deduplication as the add scripts take it: ttl 0 = none (simple mode). */
export interface NewJobDeduplication {
  id: string;
  ttl: number;
  extend: boolean;
  replace: boolean;
}

/**
 * What an add answered: `created` when the job was added; otherwise `jobId` is the job already
 * there: the one of that custom id, or (`deduplicated`) the one that holds the deduplication id.
 */
export interface AddedJob {
  jobId: string;
  created: boolean;
  /** Present (true) only when the add was dropped by deduplication. */
  deduplicated?: true;
}

export interface Finish {
  jobId: string;
  token: string;
  timestamp: number;
  /**
   * 'retried': a failed attempt with attempts left, back to ready (or delayed by `retryDelayMs`)
   * as retryJob-12 would, with fetch-next; finishJobs-13 and finishJobsBounded-13 only (never
   * moveToFinished-14, which is fixed, nor finishFlowJobs-15).
   */
  outcome: 'completed' | 'failed' | 'retried';
  /** The returnvalue JSON when completed, the failedReason when failed or retried. */
  value: string;
  stacktrace: string;
  keepCount: number;
  keepAgeMs: number;
  /** When retried: its delay in ms from `timestamp` (0 or absent: back to ready now). */
  retryDelayMs?: number;
  /** Set to take the next job in the same call. */
  next?: { token: string; lockDuration: number };
}

/** What removeJob-14 is asked besides the job. */
export interface RemoveJobCall {
  /** Answer the job's unsettled children (a parent's), for the runtime to remove. */
  children: boolean;
  /** Leave a notice for the job's parent (false when the parent is being removed too). */
  notifyParent: boolean;
  /**
   * Remove the job only while it is this parent's child (its job key): for a caller that read it
   * as a child earlier. A job re-parented since answers 'reparented' and stays.
   */
  expectedParent?: string;
}

/** removeJob-14's answer. */
export interface RemovedJob {
  outcome: 'removed' | 'locked' | 'missing' | 'reparented';
  /** A removed child's notice for its parent (JSON [parentKey, outcome, value, policy]), now in its queue. */
  notice?: string;
  /** A removed parent's unsettled children (job keys), when asked. */
  children: string[];
}

export interface Retry {
  jobId: string;
  token: string;
  timestamp: number;
  delay: number;
  failedReason: string;
  stacktrace: string;
}

export interface SweepResult {
  movedToWait: Array<{ jobId: string; stalledCount: number }>;
  movedToFailed: Array<{ jobId: string; stalledCount: number }>;
}

/** A failure reported by extendLocks-1. */
export interface LockFailure {
  jobId: string;
  code: -2 | -6;
}

/** A job cancelledAmong-1 found marked: the cancel's reason, undefined when it gave none. */
export interface MarkedCancel {
  jobId: string;
  reason?: string;
}
