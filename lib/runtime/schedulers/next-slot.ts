import { Cron } from 'croner';
import type { SlotPair } from '../../protocol/scheduler-scripts.js';
import type { Schedule } from './repeat-options.js';

/**
 * The slots of a schedule, in ms. Every instance computes the same slots from the same schedule:
 * `every` slots are startDate + k * every (the epoch when there is no startDate); cron slots are
 * croner's, in the schedule's time zone, with its DST rules (Vixie cron's, as croner-rust's): a
 * fixed-time pattern (one value in each of seconds, minutes and hours) runs a time a spring-forward
 * skips once, at the first valid time after the gap, and a time a fall-back repeats once, at its
 * first occurrence; any other pattern keeps to the wall clock (gap times skipped, a repeated time
 * run at both passes). docs/schedulers.md, "DST".
 */

/** The first slot strictly after `after`, within startDate and endDate; undefined when none is left. */
export function slotAfter(schedule: Schedule, after: number): number | undefined {
  const from = schedule.startDate !== undefined ? Math.max(after, schedule.startDate - 1) : after;
  let slot: number | undefined;
  if (schedule.every !== undefined) {
    const base = schedule.startDate ?? 0;
    slot = from < base ? base : base + (Math.floor((from - base) / schedule.every) + 1) * schedule.every;
  } else {
    const next = cronOf(schedule).nextRun(new Date(from));
    slot = next ? next.getTime() : undefined;
  }
  if (slot === undefined || (schedule.endDate !== undefined && slot > schedule.endDate)) return undefined;
  return slot;
}

/** The first two slots strictly after `after`; undefined when none is left. */
export function slotsAfter(schedule: Schedule, after: number): SlotPair | undefined {
  const first = slotAfter(schedule, after);
  return first === undefined ? undefined : { first, second: slotAfter(schedule, first) };
}

/**
 * The next two slots once the job of `firedSlot` starts (startSchedulerJob-14), at `now`: after the
 * job's slot even when this clock is behind the one that promoted it, and for `every` a whole
 * period after it. An immediate job's slot (the upsert's now) is no aligned slot: the aligned slot a
 * few ms after it would run a second job within the period; the next is the first aligned slot a
 * whole period later, as firstSlots stored it.
 */
export function slotsAfterRun(schedule: Schedule, firedSlot: number, now: number): SlotPair | undefined {
  const after = schedule.every !== undefined ? firedSlot + schedule.every - 1 : firedSlot;
  return slotsAfter(schedule, Math.max(now, after));
}

/**
 * The slots a new scheduler starts with: the first slot at or after now, and the one after. With
 * `immediately`, when now is within startDate and endDate: now, then for `every` the first aligned
 * slot a whole period later (not one a few ms away), for a pattern its first slot after now (the
 * pattern's own times; one a few ms away is one the immediate job may stand for, as for any slot
 * that comes before the job before it started).
 */
export function firstSlots(schedule: Schedule, now: number): SlotPair | undefined {
  if (schedule.immediately && (schedule.startDate === undefined || schedule.startDate <= now) && (schedule.endDate === undefined || now <= schedule.endDate)) {
    return { first: now, second: slotAfter(schedule, schedule.every !== undefined ? now + schedule.every - 1 : now) };
  }
  const first = slotAfter(schedule, now - 1);
  return first === undefined ? undefined : { first, second: slotAfter(schedule, first) };
}

/** Croner instances are kept per pattern and zone: a worker computes the slot after each scheduled job. */
const crons = new Map<string, Cron>();

function cronOf(schedule: Schedule): Cron {
  const key = `${schedule.tz ?? 'UTC'} ${schedule.pattern}`;
  let cron = crons.get(key);
  if (!cron) {
    if (crons.size >= 1000) crons.clear();
    cron = new Cron(schedule.pattern as string, { paused: true, timezone: schedule.tz ?? 'UTC' });
    crons.set(key, cron);
  }
  return cron;
}
