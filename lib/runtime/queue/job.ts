import { EchoMQError, EchoMQOptionError } from '../../protocol/errors.js';
import type { Keys } from '../../protocol/keys.js';
import { assertCustomJobId, describe } from '../../protocol/names.js';
import type { RedisClient } from '../../protocol/script.js';
import type { Scripts } from '../../protocol/scripts.js';
import { getJobState, type JobStateOrUnknown } from './job-state.js';
import type { JobOptions } from '../options.js';
import type { QueueEvents } from '../events/queue-events.js';
import { fromJson, toJson } from './serialize.js';
import { waitUntilFinished } from './wait-until-finished.js';

/** What a Job needs of its queue to act on itself. */
export interface JobContext {
  queueName: string;
  keys: Keys;
  scripts: Scripts;
  client: RedisClient;
  /** A partitioned queue's: tells its workers the job's partition has work again (lib/runtime/queue/queue-part.ts). */
  wake?(): void;
  /** Told when a job updates its progress (a Worker sets it, to emit its `progress` event). */
  onProgress?(job: Job, progress: unknown): void;
}

/** A job hash that cannot be read as a job (a field missing or not JSON). */
export class CorruptJobError extends Error {
  override readonly name = 'CorruptJobError';
  constructor(readonly jobId: string, detail: string) {
    super(`job ${jobId} is corrupt: ${detail}`);
  }
}

/**
 * A job that is not there any more: waitUntilFinished found neither its hash nor (among the newest
 * events) its end, or it was removed before it finished.
 */
export class JobNotFoundError extends Error {
  override readonly name = 'JobNotFoundError';
  constructor(readonly queue: string, readonly jobId: string, detail: string) {
    super(`job ${jobId} of queue ${queue} no longer exists: ${detail}`);
  }
}

/**
 * Whether a string can be a job's id: an automatic id (a plain integer) or a custom id as add()
 * accepts it. Any other string would address another key of the queue (`wait`, `<id>:logs`), so a
 * lookup by it answers "no such job" instead of WRONGTYPE or another key's contents.
 */
export function canNameJob(jobId: unknown): jobId is string {
  if (typeof jobId !== 'string') return false;
  if (/^\d+$/.test(jobId)) return true;
  try {
    assertCustomJobId(jobId);
    return true;
  } catch {
    return false;
  }
}

/**
 * A job: its data and state as read from its hash, and a few methods that act on it.
 * `attemptsStarted` is the job's fencing number: it grows by one at every pickup and never
 * repeats, so a handler can pass it to its own side effects to refuse a stale writer.
 */
export class Job<Data = unknown, Result = unknown> {
  progress: unknown = 0;
  returnvalue?: Result;
  failedReason?: string;
  stacktrace: string[] = [];
  attemptsMade = 0;
  attemptsStarted = 0;
  stalledCounter = 0;
  processedOn?: number;
  finishedOn?: number;

  constructor(
    private readonly context: JobContext,
    readonly id: string,
    readonly name: string,
    readonly data: Data,
    readonly opts: JobOptions,
    readonly timestamp: number,
  ) {}

  get queueName(): string {
    return this.context.queueName;
  }

  get delay(): number {
    return this.opts.delay ?? 0;
  }

  get priority(): number {
    return this.opts.priority ?? 0;
  }

  /** Builds a job from HGETALL's reply (a flat array or an object). Throws CorruptJobError. */
  static fromHash<D = unknown, R = unknown>(context: JobContext, id: string, hash: string[] | Record<string, string>): Job<D, R> {
    const fields = Array.isArray(hash) ? pairsToRecord(hash) : hash;
    if (fields.name === undefined) throw new CorruptJobError(id, 'it has no "name" field');
    const job = new Job<D, R>(context, id, fields.name, parseField<D>(id, fields, 'data') as D,
      parseField<JobOptions>(id, fields, 'opts') ?? {}, Number(fields.timestamp ?? 0));
    job.progress = parseField(id, fields, 'progress') ?? 0;
    job.returnvalue = parseField<R>(id, fields, 'returnvalue');
    job.failedReason = fields.failedReason;
    job.stacktrace = parseField<string[]>(id, fields, 'stacktrace') ?? [];
    job.attemptsMade = Number(fields.atm ?? 0);
    job.attemptsStarted = Number(fields.ats ?? 0);
    job.stalledCounter = Number(fields.stc ?? 0);
    job.processedOn = fields.processedOn ? Number(fields.processedOn) : undefined;
    job.finishedOn = fields.finishedOn ? Number(fields.finishedOn) : undefined;
    return job;
  }

  /** Stores progress (any JSON value) and emits a `progress` event. */
  async updateProgress(progress: unknown): Promise<void> {
    const json = toJson(progress, 'progress');
    await this.context.scripts.updateProgress(this.id, json);
    this.progress = progress;
    this.context.onProgress?.(this as Job, progress);
  }

  /** Appends a line to the job's log; returns how many lines it keeps. */
  async log(line: string): Promise<number> {
    if (typeof line !== 'string') throw new EchoMQOptionError('log line', 'must be a string');
    return this.context.scripts.addLog(this.id, line, this.opts.keepLogs ?? 0);
  }

  /** The job's log lines, oldest first. */
  async getLogs(start = 0, end = -1): Promise<string[]> {
    return this.context.client.lrange(this.context.keys.logs(this.id), start, end);
  }

  async getState(): Promise<JobStateOrUnknown> {
    return getJobState(this.context.client, this.context.keys, this.id);
  }

  /** Removes the job; refuses (EchoMQError -3) while a worker holds its lock. */
  async remove(): Promise<void> {
    const outcome = await this.context.scripts.removeJob(this.id);
    if (outcome === 'locked') throw new EchoMQError(-3, this.id, 'removeJob-10.lua', 'a worker holds its lock; it can be removed once it finished');
    if (outcome === 'missing') throw new EchoMQError(-1, this.id, 'removeJob-10.lua');
  }

  /** Sends a failed (or, with 'completed', a completed) job back to wait for a new round of attempts. */
  async retry(from: 'failed' | 'completed' = 'failed'): Promise<void> {
    if (from !== 'failed' && from !== 'completed') throw new EchoMQOptionError('from', `is ${describe(from)}; a job is retried from "failed" or "completed"`);
    await this.context.scripts.reprocessJob(this.id, from);
    this.context.wake?.();
    this.attemptsMade = 0;
    this.failedReason = undefined;
    this.finishedOn = undefined;
  }

  /** Resolves with the result when the job completes, rejects with its failedReason when it fails. */
  waitUntilFinished(queueEvents: QueueEvents, timeoutMs?: number): Promise<Result> {
    return waitUntilFinished<Result>(queueEvents, this.context, this.id, timeoutMs);
  }

  toJSON(): Record<string, unknown> {
    const { context: _context, ...rest } = this;
    return { ...rest, queueName: this.queueName };
  }
}

function pairsToRecord(flat: string[]): Record<string, string> {
  const record: Record<string, string> = {};
  for (let i = 0; i < flat.length; i += 2) record[flat[i]] = flat[i + 1];
  return record;
}

function parseField<T>(id: string, fields: Record<string, string>, name: string): T | undefined {
  try {
    return fromJson<T>(fields[name]);
  } catch {
    throw new CorruptJobError(id, `field "${name}" is not valid JSON`);
  }
}
