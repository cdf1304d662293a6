import { EchoMQOptionError } from '../../protocol/errors.js';
import { describe } from '../../protocol/names.js';
import { partitionOf } from '../../protocol/partitions.js';
import { assertSchedulerId, schedulerJobId } from '../../protocol/scheduler-ids.js';
import { Job } from '../job/job.js';
import { sliceLikeRange } from '../job/partition-order.js';
import type { QueuePart } from '../job/queue-part.js';
import { fromJson } from '../core/serialize.js';
import type { JobOptions } from '../core/job-options.js';
import { firstSlots } from './next-slot.js';
import { parseRepeatOptions, type RepeatOptions, type Schedule } from './repeat-options.js';
import { storedScheduler, type JobSchedulerTemplate } from './template.js';

/** A job scheduler as getJobScheduler answers it (BullMQ's JobSchedulerJson). */
export interface JobSchedulerJson<Data = unknown> extends Omit<Schedule, 'immediately'> {
  /** The scheduler's id. */
  key: string;
  /** The name of the jobs it makes. */
  name: string;
  /** When its next job is due (ms). */
  next: number;
  /** The slot after next, whose job is made too (so that a worker lost at next's pickup delays no slot). */
  after?: number;
  /** How many jobs it has made. */
  iterationCount: number;
  template: { data: Data; opts: JobOptions };
}

/** What the Queue lends its schedulers. */
export interface SchedulerHost {
  parts: readonly QueuePart[];
  defaults: JobOptions;
  maxDataSize: number;
  /** A partitioned queue's check of its partition count (before the first write). */
  beforeWrite(): Promise<void>;
}

/**
 * The Queue's job scheduler methods (BullMQ's names). A scheduler lives in one hash tag: a plain
 * queue's, or the partition its id routes to, with every job it makes (docs/schedulers.md).
 */
export class JobSchedulers<Data = unknown, Result = unknown> {
  constructor(private readonly host: SchedulerHost) {}

  /**
   * Creates the scheduler, or replaces its schedule and template. The same arguments again change
   * nothing. Returns its next job, or undefined when it has none left (its limit was reached).
   */
  async upsert(schedulerId: string, repeat: RepeatOptions, template?: JobSchedulerTemplate<Data>): Promise<Job<Data, Result> | undefined> {
    assertSchedulerId(schedulerId);
    const now = Date.now();
    const schedule = parseRepeatOptions(repeat);
    const stored = storedScheduler(schedulerId, schedule, template, this.host.defaults, this.host.maxDataSize);
    // No slot left (its endDate passed): the scheduler is recorded as ended, and the same upsert
    // at the next boot changes nothing.
    const slots = firstSlots(schedule, now);
    await this.host.beforeWrite();
    const part = this.partOf(schedulerId);
    const { next } = await part.schedulerScripts.upsert(schedulerId, stored, slots, now);
    if (next === undefined) return undefined;
    part.wake();
    const jobId = schedulerJobId(schedulerId, next);
    const fields = await part.client.hgetall(part.keys.job(jobId));
    return Object.keys(fields).length === 0 ? undefined : Job.fromHash<Data, Result>(part.context, jobId, fields);
  }

  async get(schedulerId: string): Promise<JobSchedulerJson<Data> | undefined> {
    assertSchedulerId(schedulerId);
    const part = this.partOf(schedulerId);
    const fields = await part.client.hgetall(part.keys.scheduler(schedulerId));
    return Object.keys(fields).length === 0 || fields.ended ? undefined : schedulerJson<Data>(schedulerId, fields);
  }

  /** Schedulers by the due time of their next job, latest first unless `asc`, `start` to `end` inclusive. */
  async list(start = 0, end = -1, asc = false): Promise<Array<JobSchedulerJson<Data>>> {
    for (const [value, field] of [[start, 'start'], [end, 'end']] as const) {
      if (!Number.isInteger(value)) throw new EchoMQOptionError(field, `must be a whole number, got ${describe(value)}`);
    }
    const parts = this.host.parts;
    // Each part's first end + 1 schedulers hold the whole queue's first end + 1.
    const [from, to] = parts.length === 1 ? [start, end] : start < 0 || end < 0 ? [0, -1] : [0, end];
    const perPart = await Promise.all(parts.map(async (part) => {
      const ids = await liveSchedulerIds(part, from, to, asc);
      const pipeline = part.client.pipeline();
      for (const id of ids) pipeline.hgetall(part.keys.scheduler(id));
      const replies = ids.length === 0 ? [] : ((await pipeline.exec()) ?? []);
      return replies.flatMap(([error, fields], i) => {
        if (error) throw error;
        const record = fields as Record<string, string>;
        return Object.keys(record).length === 0 || record.ended ? [] : [schedulerJson<Data>(ids[i], record)];
      });
    }));
    if (parts.length === 1) return perPart[0];
    const merged = perPart.flat().sort((a, b) => (asc ? a.next - b.next : b.next - a.next));
    return sliceLikeRange(merged, start, end);
  }

  async count(): Promise<number> {
    const counts = await Promise.all(this.host.parts.map((part) => part.client.zcount(part.keys.schedulers, '-inf', '(+inf')));
    return counts.reduce((sum, n) => sum + n, 0);
  }

  /** Removes the scheduler and its next job unless that job has started. False when there was none. */
  async remove(schedulerId: string): Promise<boolean> {
    assertSchedulerId(schedulerId);
    return this.partOf(schedulerId).schedulerScripts.remove(schedulerId);
  }

  private partOf(schedulerId: string): QueuePart {
    const parts = this.host.parts;
    return parts.length === 1 ? parts[0] : parts[partitionOf(schedulerId, parts.length)];
  }
}

/**
 * The ids of the live schedulers (ended ones are scored +inf), by next slot, ranks `from` to `to`
 * (negative counting from the end) among the live ones.
 */
async function liveSchedulerIds(part: QueuePart, from: number, to: number, asc: boolean): Promise<string[]> {
  const key = part.keys.schedulers;
  let offset = from;
  let count = to < 0 ? -1 : to - from + 1;
  if (from < 0 || to < -1) {
    const live = await part.client.zcount(key, '-inf', '(+inf');
    offset = from < 0 ? Math.max(0, live + from) : from;
    count = Math.max(0, (to < 0 ? live + to : to) - offset + 1);
  }
  if (count === 0) return [];
  return asc
    ? part.client.zrangebyscore(key, '-inf', '(+inf', 'LIMIT', offset, count)
    : part.client.zrevrangebyscore(key, '(+inf', '-inf', 'LIMIT', offset, count);
}

function schedulerJson<Data>(schedulerId: string, fields: Record<string, string>): JobSchedulerJson<Data> {
  const schedule = fromJson<Schedule>(fields.repeat) ?? {};
  const json: JobSchedulerJson<Data> = {
    key: schedulerId,
    name: fields.name,
    next: Number(fields.next),
    iterationCount: Number(fields.ic ?? 0),
    ...(fields.after ? { after: Number(fields.after) } : {}),
    template: { data: fromJson<Data>(fields.data) as Data, opts: fromJson<JobOptions>(fields.opts) ?? {} },
  };
  for (const key of ['pattern', 'tz', 'every', 'startDate', 'endDate', 'limit'] as const) {
    if (schedule[key] !== undefined) (json as unknown as Record<string, unknown>)[key] = schedule[key];
  }
  return json;
}
