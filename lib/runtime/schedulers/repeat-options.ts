import { Cron } from 'croner';
import { EchoMQOptionError } from '../../protocol/errors.js';
import { describe } from '../../protocol/names.js';

/**
 * When a job scheduler makes jobs: BullMQ's `RepeatOptions` for job schedulers, either a cron
 * `pattern` (5 fields, or 6 with seconds first; in `tz`, default UTC) or `every` ms.
 */
export interface RepeatOptions {
  /** A cron pattern: `0 3 * * *`, or with seconds `*\/10 * * * * *`. */
  pattern?: string;
  /** An IANA time zone for `pattern` (`Europe/Paris`). Default UTC. */
  tz?: string;
  /** A fixed period in ms; slots are aligned to startDate, else to the epoch, so that every instance agrees. */
  every?: number;
  /** No slot before this time. */
  startDate?: Date | string | number;
  /** No slot after this time; the scheduler ends once it passed (an endDate already past ends it at once). */
  endDate?: Date | string | number;
  /** Make at most this many jobs, then remove the scheduler. */
  limit?: number;
  /**
   * The first job is due at once (at upsert), then the slots follow: for `every` the first aligned
   * slot a whole period later, for a pattern its own next time. It counts toward `limit`. Ignored
   * while a startDate is still to come (the first job waits for it) or once endDate has passed. An
   * upsert with the same arguments makes no other immediate job; a changed one starts anew, at once.
   */
  immediately?: boolean;
}

/** A schedule as it is stored (P:{Q}:repeat:<id>, field `repeat`) and carried by its jobs (`rpt`). */
export interface Schedule {
  pattern?: string;
  tz?: string;
  every?: number;
  startDate?: number;
  endDate?: number;
  limit?: number;
  immediately?: boolean;
}

const KNOWN = new Set(['pattern', 'tz', 'every', 'startDate', 'endDate', 'limit', 'immediately']);

/** Checks repeat options and returns the schedule they mean; throws EchoMQOptionError naming the field. */
export function parseRepeatOptions(repeat: RepeatOptions, at = 'repeat'): Schedule {
  if (typeof repeat !== 'object' || repeat === null || Array.isArray(repeat)) {
    throw new EchoMQOptionError(at, `must be an object such as { pattern: '0 3 * * *' } or { every: 60000 }, got ${describe(repeat)}`);
  }
  for (const key of Object.keys(repeat)) {
    if (KNOWN.has(key)) continue;
    const hint = key === 'cron' ? '; the cron pattern is given as "pattern"' : `; known: ${[...KNOWN].join(', ')}`;
    throw new EchoMQOptionError(`${at}.${key}`, `is not a repeat option${hint}`);
  }
  const { pattern, every, tz } = repeat;
  if ((pattern === undefined) === (every === undefined)) {
    throw new EchoMQOptionError(`${at}.pattern`, 'give either pattern (cron) or every (ms), not both and not neither');
  }
  const schedule: Schedule = {};
  if (pattern !== undefined) {
    if (typeof pattern !== 'string' || pattern.trim() === '') throw new EchoMQOptionError(`${at}.pattern`, `must be a cron pattern string, got ${describe(pattern)}`);
    if (tz !== undefined) assertTimeZone(tz, `${at}.tz`);
    try {
      new Cron(pattern, { paused: true, timezone: tz ?? 'UTC' });
    } catch (error) {
      throw new EchoMQOptionError(`${at}.pattern`, `${describe(pattern)} is not a valid cron pattern: ${(error as Error).message}`);
    }
    schedule.pattern = pattern;
    if (tz !== undefined) schedule.tz = tz;
  } else {
    if (!Number.isInteger(every) || (every as number) <= 0) throw new EchoMQOptionError(`${at}.every`, `must be a whole number of ms above 0, got ${describe(every)}`);
    if (tz !== undefined) throw new EchoMQOptionError(`${at}.tz`, 'applies to a cron pattern; every counts ms, in no time zone');
    schedule.every = every;
  }
  const startDate = timeOf(repeat.startDate, `${at}.startDate`);
  const endDate = timeOf(repeat.endDate, `${at}.endDate`);
  if (startDate !== undefined) schedule.startDate = startDate;
  if (endDate !== undefined) {
    if (startDate !== undefined && endDate <= startDate) throw new EchoMQOptionError(`${at}.endDate`, `(${new Date(endDate).toISOString()}) is not after startDate (${new Date(startDate).toISOString()})`);
    schedule.endDate = endDate;
  }
  if (repeat.limit !== undefined) {
    if (!Number.isInteger(repeat.limit) || repeat.limit <= 0) throw new EchoMQOptionError(`${at}.limit`, `must be a whole number above 0, got ${describe(repeat.limit)}`);
    schedule.limit = repeat.limit;
  }
  if (repeat.immediately !== undefined) {
    if (typeof repeat.immediately !== 'boolean') throw new EchoMQOptionError(`${at}.immediately`, `must be true or false, got ${describe(repeat.immediately)}`);
    if (repeat.immediately) schedule.immediately = true;
  }
  return schedule;
}

/** The schedule as stored: JSON with its keys in one fixed order, so equal schedules are equal strings. */
export function scheduleJson(schedule: Schedule): string {
  const ordered: Schedule = {};
  for (const key of ['pattern', 'tz', 'every', 'startDate', 'endDate', 'limit', 'immediately'] as const) {
    if (schedule[key] !== undefined) (ordered as Record<string, unknown>)[key] = schedule[key];
  }
  return JSON.stringify(ordered);
}

function assertTimeZone(tz: unknown, field: string): void {
  if (typeof tz !== 'string' || tz === '') throw new EchoMQOptionError(field, `must be an IANA time zone name such as "Europe/Paris", got ${describe(tz)}`);
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
  } catch {
    throw new EchoMQOptionError(field, `${describe(tz)} is not a time zone this Node.js knows (IANA names such as "Europe/Paris")`);
  }
}

function timeOf(value: Date | string | number | undefined, field: string): number | undefined {
  if (value === undefined) return undefined;
  const ms = value instanceof Date ? value.getTime() : typeof value === 'number' ? value : typeof value === 'string' ? Date.parse(value) : NaN;
  if (!Number.isFinite(ms) || (typeof value === 'number' && !Number.isInteger(value))) {
    throw new EchoMQOptionError(field, `must be a Date, an ISO date string or whole ms since the epoch, got ${describe(value)}`);
  }
  return ms;
}
