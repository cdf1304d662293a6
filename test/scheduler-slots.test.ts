import { describe, expect, it } from '@jest/globals';
import { EchoMQOptionError } from '../lib/index.js';
import { firstSlots, parseRepeatOptions, scheduleJson, slotAfter, slotsAfterRun } from '../lib/internal.js';

// Slots of job schedulers, computed (no Redis, no sleeping): alignment, start and end, cron with
// seconds and time zones, and the DST changes of a fixed zone.
const NOW = Date.UTC(2026, 0, 15, 12, 0, 0, 123);
const iso = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString());
const slots = (repeat: Parameters<typeof parseRepeatOptions>[0], from: number, count: number) => {
  const schedule = parseRepeatOptions(repeat);
  const out: Array<string | undefined> = [];
  let at: number | undefined = from;
  for (let i = 0; i < count && at !== undefined; i++) {
    at = slotAfter(schedule, at);
    out.push(iso(at));
  }
  return out;
};

describe('every', () => {
  it('is aligned to the epoch, so that every instance computes the same slots', () => {
    expect(slots({ every: 60_000 }, NOW, 2)).toEqual(['2026-01-15T12:01:00.000Z', '2026-01-15T12:02:00.000Z']);
    expect(slotAfter(parseRepeatOptions({ every: 200 }), 1_000)).toBe(1_200);
    expect(slotAfter(parseRepeatOptions({ every: 200 }), 1_199)).toBe(1_200);
  });

  it('is aligned to startDate when there is one, and waits for a future startDate', () => {
    const start = NOW + 10_500;
    expect(slots({ every: 1_000, startDate: start }, NOW, 3).map((s) => Date.parse(s!) - start)).toEqual([0, 1_000, 2_000]);
    const past = NOW - 10_250;
    expect(Date.parse(slots({ every: 1_000, startDate: past }, NOW, 1)[0]!) - past).toBe(11_000);
  });

  it('starts at once with immediately (then at the first aligned slot a whole period later), and at the next aligned slot without', () => {
    const schedule = parseRepeatOptions({ every: 60_000, immediately: true });
    expect(firstSlots(schedule, NOW)).toEqual({ first: NOW, second: Date.UTC(2026, 0, 15, 12, 2) });
    expect(firstSlots(schedule, Date.UTC(2026, 0, 15, 12, 0, 59, 999))!.second).toBe(Date.UTC(2026, 0, 15, 12, 1, 59, 999) + 1);
    expect(firstSlots(parseRepeatOptions({ every: 60_000 }), NOW)).toEqual({ first: Date.UTC(2026, 0, 15, 12, 1), second: Date.UTC(2026, 0, 15, 12, 2) });
  });

  it('once the immediate job starts, the next run is a whole period after it, not the aligned slot a few ms away', () => {
    const schedule = parseRepeatOptions({ every: 60_000, immediately: true });
    const { first: immediate, second } = firstSlots(schedule, NOW)!;
    // Started 5 ms after it was due: the slots that follow are the one firstSlots stored and the next.
    expect(slotsAfterRun(schedule, immediate, immediate + 5)).toEqual({ first: second, second: second! + 60_000 });
    // An aligned slot's job, taken on time or late within its period: the next aligned slots.
    const aligned = Date.UTC(2026, 0, 15, 12, 1);
    expect(slotsAfterRun(schedule, aligned, aligned + 10)).toEqual({ first: aligned + 60_000, second: aligned + 120_000 });
    // Taken more than a period late: the slots after now.
    expect(slotsAfterRun(schedule, aligned, aligned + 150_000)).toEqual({ first: aligned + 180_000, second: aligned + 240_000 });
  });

  it('stops at endDate', () => {
    expect(slots({ every: 60_000, endDate: NOW + 150_000 }, NOW, 4)).toEqual(['2026-01-15T12:01:00.000Z', '2026-01-15T12:02:00.000Z', undefined]);
  });
});

describe('immediately', () => {
  it.each([
    ['every', { every: 60_000 }],
    ['a pattern', { pattern: '0 * * * *' }],
  ] as Array<[string, Parameters<typeof parseRepeatOptions>[0]]>)('with %s: waits for a startDate still to come, and makes no job once endDate has passed', (_what, base) => {
    const start = NOW + 90 * 60_000;
    const waiting = firstSlots(parseRepeatOptions({ ...base, immediately: true, startDate: start }), NOW);
    expect(waiting).toEqual(firstSlots(parseRepeatOptions({ ...base, startDate: start }), NOW));
    expect(waiting!.first).toBeGreaterThanOrEqual(start);
    expect(firstSlots(parseRepeatOptions({ ...base, immediately: true, endDate: NOW - 1 }), NOW)).toBeUndefined();
    expect(firstSlots(parseRepeatOptions({ ...base, immediately: true, endDate: NOW }), NOW)).toEqual({ first: NOW, second: undefined });
  });
});

describe('cron patterns', () => {
  it('take a seconds field', () => {
    expect(slots({ pattern: '*/10 * * * * *' }, NOW, 3)).toEqual(['2026-01-15T12:00:10.000Z', '2026-01-15T12:00:20.000Z', '2026-01-15T12:00:30.000Z']);
  });

  it('run in UTC unless a time zone is given', () => {
    expect(slots({ pattern: '0 3 * * *' }, NOW, 1)).toEqual(['2026-01-16T03:00:00.000Z']);
    expect(slots({ pattern: '0 3 * * *', tz: 'Europe/Paris' }, NOW, 1)).toEqual(['2026-01-16T02:00:00.000Z']);
    expect(slots({ pattern: '0 3 * * *', tz: 'America/New_York' }, NOW, 1)).toEqual(['2026-01-16T08:00:00.000Z']);
  });

  it('run once when a spring-forward skips their time (Europe/Paris, 29 March 2026: 02:00 to 03:00)', () => {
    // 02:30 does not exist that night: the run is at the first valid time, 03:00 CEST (01:00 UTC), once.
    const from = Date.UTC(2026, 2, 27, 12);
    expect(slots({ pattern: '30 2 * * *', tz: 'Europe/Paris' }, from, 3)).toEqual([
      '2026-03-28T01:30:00.000Z', // 02:30 CET
      '2026-03-29T01:00:00.000Z', // 03:00 CEST: the skipped 02:30, once
      '2026-03-30T00:30:00.000Z', // 02:30 CEST
    ]);
  });

  it('run once when a fall-back repeats their time (Europe/Paris, 25 October 2026: 03:00 back to 02:00)', () => {
    // 02:30 happens twice that night (00:30 and 01:30 UTC): the job runs at the first only.
    const from = Date.UTC(2026, 9, 24, 12);
    expect(slots({ pattern: '30 2 * * *', tz: 'Europe/Paris' }, from, 2)).toEqual([
      '2026-10-25T00:30:00.000Z',
      '2026-10-26T01:30:00.000Z',
    ]);
  });

  it("start at once with immediately, then at the pattern's own times", () => {
    const paris = { pattern: '0 3 * * *', tz: 'Europe/Paris' };
    expect(firstSlots(parseRepeatOptions({ ...paris, immediately: true }), NOW)).toEqual({ first: NOW, second: Date.UTC(2026, 0, 16, 2) });
    expect(firstSlots(parseRepeatOptions(paris), NOW)).toEqual({ first: Date.UTC(2026, 0, 16, 2), second: Date.UTC(2026, 0, 17, 2) });
    // The pattern's next time, however close: the pattern's times are kept, none moved.
    const seconds = firstSlots(parseRepeatOptions({ pattern: '* * * * * *', immediately: true }), NOW);
    expect(seconds).toEqual({ first: NOW, second: Date.UTC(2026, 0, 15, 12, 0, 1) });
  });

  it('keep to the wall clock at DST changes when not a fixed time: gap times skipped, repeated times run at both passes', () => {
    // Paris, */30 2 * * *: 29 March 2026 has no 02:xx (no run that day), 25 October 2026 two (four runs).
    expect(slots({ pattern: '*/30 2 * * *', tz: 'Europe/Paris' }, Date.UTC(2026, 2, 27, 12), 3)).toEqual([
      '2026-03-28T01:00:00.000Z', '2026-03-28T01:30:00.000Z', '2026-03-30T00:00:00.000Z',
    ]);
    expect(slots({ pattern: '*/30 2 * * *', tz: 'Europe/Paris' }, Date.UTC(2026, 9, 24, 12), 5)).toEqual([
      '2026-10-25T00:00:00.000Z', '2026-10-25T00:30:00.000Z', '2026-10-25T01:00:00.000Z', '2026-10-25T01:30:00.000Z', '2026-10-26T01:00:00.000Z',
    ]);
  });

  it('keep hourly slots an hour apart through both changes, none skipped, none doubled', () => {
    for (const day of [Date.UTC(2026, 2, 28, 20), Date.UTC(2026, 9, 24, 20)]) {
      const hours = slots({ pattern: '0 * * * *', tz: 'Europe/Paris' }, day, 12).map((s) => Date.parse(s!));
      const gaps = hours.slice(1).map((h, i) => h - hours[i]);
      expect(new Set(gaps)).toEqual(new Set([3_600_000]));
    }
  });
});

describe('the stored schedule', () => {
  it('is one string for equal schedules, whatever the order of their options', () => {
    const a = scheduleJson(parseRepeatOptions({ tz: 'Europe/Paris', pattern: '0 3 * * *', limit: 5 }));
    const b = scheduleJson(parseRepeatOptions({ limit: 5, pattern: '0 3 * * *', tz: 'Europe/Paris' }));
    expect(a).toBe(b);
    expect(JSON.parse(a)).toEqual({ pattern: '0 3 * * *', tz: 'Europe/Paris', limit: 5 });
  });

  it('keeps dates as ms, whatever form they were given in', () => {
    const start = new Date(NOW + 60_000);
    const fromDate = parseRepeatOptions({ every: 1000, startDate: start });
    expect(parseRepeatOptions({ every: 1000, startDate: start.toISOString() })).toEqual(fromDate);
    expect(parseRepeatOptions({ every: 1000, startDate: start.getTime() })).toEqual(fromDate);
  });
});

describe('bad repeat options are refused, naming the field', () => {
  const cases: Array<[string, unknown, string]> = [
    ['not an object', 'every minute', 'repeat'],
    ['a bad pattern', { pattern: '61 * * * *' }, 'repeat.pattern'],
    ['an empty pattern', { pattern: ' ' }, 'repeat.pattern'],
    ['both pattern and every', { pattern: '* * * * *', every: 1000 }, 'repeat.pattern'],
    ['neither pattern nor every', { limit: 3 }, 'repeat.pattern'],
    ['every not whole', { every: 1.5 }, 'repeat.every'],
    ['every zero', { every: 0 }, 'repeat.every'],
    ['every as a string', { every: '1000' }, 'repeat.every'],
    ['an unknown time zone', { pattern: '0 3 * * *', tz: 'Mars/Olympus' }, 'repeat.tz'],
    ['a time zone with every', { every: 1000, tz: 'UTC' }, 'repeat.tz'],
    ['endDate before startDate', { every: 1000, startDate: NOW + 5000, endDate: NOW + 1000 }, 'repeat.endDate'],
    ['a bad date', { every: 1000, startDate: 'tomorrow' }, 'repeat.startDate'],
    ['limit zero', { every: 1000, limit: 0 }, 'repeat.limit'],
    ['immediately not a boolean', { pattern: '* * * * *', immediately: 'yes' }, 'repeat.immediately'],
    ["Bull's cron key", { cron: '* * * * *' }, 'repeat.cron'],
  ];
  it.each(cases)('%s', (_what, repeat, field) => {
    let caught: unknown;
    try {
      parseRepeatOptions(repeat as never);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(EchoMQOptionError);
    expect((caught as EchoMQOptionError).field).toBe(field);
  });
});
