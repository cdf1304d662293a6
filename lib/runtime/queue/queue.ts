import { EchoMQError, EchoMQOptionError } from '../../protocol/errors.js';
import type { Keys } from '../../protocol/keys.js';
import { assertQueueName, describe } from '../../protocol/names.js';
import {
  assertCustomIdForPartitions, assertPartitionedName, partitionOf, partitionOfAutoId, routingKeyOf,
} from '../../protocol/partitions.js';
import type { RedisClient } from '../../protocol/script.js';
import type { NewJob } from '../../protocol/scripts.js';
import { closeClient, connect } from '../connection.js';
import { canNameJob, Job } from './job.js';
import { JOB_STATES, parseJobState, parseJobStates, type JobStateName } from './job-state.js';
import { resolveQueueOptions, validateJobOptions, type JobOptions, type QueueOptions, type ResolvedQueueOptions } from '../options.js';
import { LIST_STATES, QueuePart } from './queue-part.js';
import { partitionCountError } from './partition-count.js';
import { orderAcrossPartitions, sliceLikeRange } from './partition-order.js';
import { explainRedisError } from '../redis-health.js';
import { toJson } from './serialize.js';

/** How many jobs each state holds, keyed by the name the caller used (`waiting` or `wait`). */
export type JobCounts = Record<JobStateName, number>;

/**
 * Queue: adds jobs and reads and manages a queue's state. It holds one shared connection and
 * never blocks on it. With `partitions: n` it is one queue over n hash tags (QueuePart each):
 * adds are routed to one, reads and management visit all of them.
 */
export class Queue<Data = unknown, Result = unknown> {
  readonly client: RedisClient;
  readonly options: ResolvedQueueOptions;
  private readonly parts: QueuePart[];
  private readonly ownsClient: boolean;
  /** The partition the next job without a routing key goes to. */
  private roundRobin = 0;
  private closing?: Promise<void>;
  /** A partitioned queue's first add checks its count against the one in Redis (partition-count.ts). */
  private countChecked?: Promise<void>;

  constructor(readonly name: string, opts: QueueOptions = {}) {
    assertQueueName(name);
    this.options = resolveQueueOptions(opts);
    const { partitions, prefix, maxEvents } = this.options;
    assertPartitionedName(name, partitions);
    const { client, owned } = connect(opts.connection);
    this.client = client;
    this.ownsClient = owned;
    this.parts = Array.from({ length: partitions }, (_, i) => new QueuePart(client, name, i, partitions, prefix, maxEvents));
  }

  /** The number of hash tags the queue is spread over (1 unless `partitions` was given). */
  get partitions(): number {
    return this.parts.length;
  }

  /** The queue's keys. A partitioned queue has a set per partition: see `partitionKeys`. */
  get keys(): Keys {
    if (this.parts.length > 1) throw new Error(`queue ${this.name} has ${this.parts.length} partitions, each with its own keys: use queue.partitionKeys`);
    return this.parts[0].keys;
  }

  /** The keys of each partition, in partition order (one entry for a plain queue). */
  get partitionKeys(): readonly Keys[] {
    return this.parts.map((part) => part.keys);
  }

  /** Adds a job. With a `jobId` that already exists, returns the existing job and writes nothing. */
  async add(name: string, data: Data, opts: JobOptions = {}): Promise<Job<Data, Result>> {
    const prepared = this.prepare(name, data, opts, 'add');
    this.assertOpen();
    if (this.parts.length > 1) await this.checkCount();
    const part = this.route(prepared.opts);
    const { jobId, created } = await part.adds.submit(prepared.job).catch((error: unknown) => {
      throw explainRedisError(error, `add of job "${name}" to queue ${this.name}`);
    });
    return created ? this.fromPrepared(part, jobId, prepared) : this.getExisting(part, jobId);
  }

  /**
   * Adds many jobs in one round trip (one per partition they go to, in parallel). Every job is
   * validated before anything is sent: one bad job refuses the whole batch.
   */
  async addBulk(jobs: Array<{ name: string; data: Data; opts?: JobOptions }>): Promise<Array<Job<Data, Result>>> {
    if (!Array.isArray(jobs)) throw new EchoMQOptionError('addBulk', `takes an array of { name, data, opts }, got ${describe(jobs)}`);
    const prepared = jobs.map((job, i) => this.prepare(job?.name, job?.data, job?.opts ?? {}, `addBulk[${i}]`));
    this.assertOpen();
    if (this.parts.length > 1) await this.checkCount();
    const action = `addBulk of ${jobs.length} jobs to queue ${this.name}`;
    const byPart = new Map<QueuePart, number[]>();
    prepared.forEach((p, i) => {
      const part = this.route(p.opts);
      const positions = byPart.get(part);
      if (positions) positions.push(i);
      else byPart.set(part, [i]);
    });
    const results = new Array<{ part: QueuePart; result: { jobId: string; created: boolean } | Error }>(jobs.length);
    await Promise.all([...byPart].map(async ([part, positions]) => {
      const replies = await part.addJobs(positions.map((i) => prepared[i].job)).catch((error: unknown) => {
        throw explainRedisError(error, action);
      });
      replies.forEach((result, j) => (results[positions[j]] = { part, result }));
    }));
    return Promise.all(results.map(async ({ part, result }, i) => {
      if (result instanceof Error) throw explainRedisError(result, action);
      return result.created ? this.fromPrepared(part, result.jobId, prepared[i]) : this.getExisting(part, result.jobId);
    }));
  }

  /** The job of this id; undefined when there is none, or the id cannot name a job (e.g. `wait`). */
  async getJob(jobId: string): Promise<Job<Data, Result> | undefined> {
    if (!canNameJob(jobId)) return undefined;
    for (const candidates of this.partsThatMayHold(jobId)) {
      const found = await Promise.all(candidates.map((part) => this.hashes(part, [jobId]).then(([job]) => job)));
      const job = found.find((j) => j !== undefined);
      if (job) return job;
    }
    return undefined;
  }

  /**
   * Jobs in the given states, in the order they will run (wait, paused, active, prioritized,
   * delayed: next first) or newest first (completed, failed), `start` to `end` inclusive per state.
   * `waiting` is taken for `wait`; an unknown state is refused (EchoMQOptionError). Across the
   * partitions of a partitioned queue, jobs are ordered by when they were added (wait, paused,
   * active), their priority, their due time (delayed) or when they finished (completed, failed).
   */
  async getJobs(states: JobStateName | JobStateName[] = [...JOB_STATES], start = 0, end = -1): Promise<Array<Job<Data, Result>>> {
    const list = parseJobStates(states);
    assertIndex(start, 'start');
    assertIndex(end, 'end');
    if (this.parts.length === 1) {
      const perState = await this.idsPerState(this.parts[0], list, start, end);
      return this.present(this.parts[0], perState.flat());
    }
    // Each partition's first end + 1 jobs hold the whole queue's first end + 1: read those, order, cut.
    const upTo = start < 0 || end < 0 ? -1 : end;
    const perPart = await Promise.all(this.parts.map(async (part) => {
      const perState = await this.idsPerState(part, list, 0, upTo);
      return Promise.all(perState.map((ids) => this.present(part, ids)));
    }));
    return list.flatMap((state, s) => sliceLikeRange(orderAcrossPartitions(state, perPart.map((jobs) => jobs[s])), start, end));
  }

  /**
   * How many jobs each state holds (every state when none is named). The answer is keyed by the
   * names asked for: `getJobCounts('waiting')` answers `{ waiting: n }`. An unknown state is refused.
   */
  async getJobCounts(...states: JobStateName[]): Promise<Partial<JobCounts>> {
    const names: JobStateName[] = states.length > 0 ? states : [...JOB_STATES];
    const list = parseJobStates(names);
    const perPart = await Promise.all(this.parts.map((part) => part.counts(list)));
    const counts: Partial<JobCounts> = {};
    names.forEach((name, i) => (counts[name] = perPart.reduce((sum, partCounts) => sum + partCounts[i], 0)));
    return counts;
  }

  /** Stops workers from taking new jobs; running jobs go on to their end. Every partition is paused. */
  async pause(): Promise<void> {
    await Promise.all(this.parts.map((part) => part.scripts.pause('pause')));
  }

  /** Lets workers take jobs again, from every partition. */
  async resume(): Promise<void> {
    await Promise.all(this.parts.map(async (part) => {
      await part.scripts.pause('resume');
      part.wake();
    }));
  }

  /** True when the queue is paused (a partitioned one: when any of its partitions is, as after a pause that reached only some). */
  async isPaused(): Promise<boolean> {
    const flags = await Promise.all(this.parts.map((part) => this.client.hexists(part.keys.meta, 'paused')));
    return flags.some((flag) => flag === 1);
  }

  /**
   * Removes every waiting job (and delayed ones with `delayed`); active and finished ones stay.
   * One drain-5 call removes at most 1,000 jobs; it loops until none is left, partition by partition.
   */
  async drain(delayed = false): Promise<void> {
    for (const part of this.parts) while ((await part.scripts.drain(delayed)) > 0);
  }

  /**
   * Removes up to `limit` jobs (0 = no limit) of one state that are older than `grace` ms
   * (finishedOn for finished jobs, creation otherwise); jobs a worker holds stay. Returns the
   * removed ids. It goes through the state one window of ids per cleanJobsInSet-2 call, so no call
   * holds Redis (and every worker's heartbeat) for long, whatever the state's size; jobs that move
   * while it runs may be missed. A partitioned queue is cleaned partition by partition.
   */
  async clean(grace: number, limit = 0, stateName: JobStateName = 'completed'): Promise<string[]> {
    if (!Number.isInteger(grace) || grace < 0) throw new EchoMQOptionError('grace', `must be a whole number of ms >= 0, got ${describe(grace)}`);
    if (!Number.isInteger(limit) || limit < 0) throw new EchoMQOptionError('limit', `must be a whole number >= 0, got ${describe(limit)}`);
    const state = parseJobState(stateName, 'state');
    const cutoff = Date.now() - grace;
    const removed: string[] = [];
    for (const part of this.parts) {
      let rank = 0;
      do {
        if (limit > 0 && removed.length >= limit) return removed;
        const swept = await part.scripts.cleanJobsInSet(state, cutoff, limit === 0 ? 0 : limit - removed.length, rank);
        removed.push(...swept.removed);
        rank = swept.nextRank;
      } while (rank >= 0);
    }
    return removed;
  }

  /**
   * Deletes the queue and all its jobs. Refuses while jobs are active, unless `force`. One
   * obliterate-2 call deletes at most 1,000 jobs; it loops until the queue is gone. A partitioned
   * queue checks every partition for active jobs before it deletes anything.
   */
  async obliterate(opts: { force?: boolean } = {}): Promise<void> {
    const force = opts.force === true;
    if (!force && this.parts.length > 1) {
      const active = await this.getJobCounts('active');
      if ((active.active ?? 0) > 0) throw activeRefusal();
    }
    for (const part of this.parts) {
      for (;;) {
        const reply = await part.scripts.obliterate(force);
        if (reply === 1) break;
        if (reply === -3) throw activeRefusal();
      }
    }
  }

  /** Closes the queue's connection if the queue created it. Adding afterwards is refused. */
  close(): Promise<void> {
    for (const part of this.parts) part.adds.flush(); // adds of this turn go before the QUIT
    this.closing ??= this.ownsClient ? closeClient(this.client) : Promise.resolve();
    return this.closing;
  }

  private assertOpen(): void {
    if (this.closing) throw new Error(`queue ${this.name} is closed: it takes no more jobs`);
  }

  /** Once per Queue (again after a failure): refuses adds when Redis records another partition count. */
  private checkCount(): Promise<void> {
    this.countChecked ??= partitionCountError(this.client, this.parts[0].keys, this.name, this.parts.length, 'this Queue').then((mismatch) => {
      if (mismatch) throw mismatch;
    }).catch((error: unknown) => {
      this.countChecked = undefined;
      throw error;
    });
    return this.countChecked;
  }

  /** The partition a job goes to: by its partitionKey, else its custom id, else round-robin. */
  private route(opts: JobOptions): QueuePart {
    const count = this.parts.length;
    if (count === 1) return this.parts[0];
    const key = routingKeyOf(opts);
    if (key !== undefined) return this.parts[partitionOf(key, count)];
    const part = this.parts[this.roundRobin];
    this.roundRobin = (this.roundRobin + 1) % count;
    return part;
  }

  /**
   * Where to look for a job, in rounds: a plain queue's one part; the partition an automatic id
   * names; for a custom id, the one its id routes to, then (it may have had a partitionKey) all others.
   */
  private partsThatMayHold(jobId: string): QueuePart[][] {
    const count = this.parts.length;
    if (count === 1) return [this.parts];
    const named = partitionOfAutoId(jobId, count);
    if (named !== undefined) return [[this.parts[named]]];
    const first = this.parts[partitionOf(jobId, count)];
    return [[first], this.parts.filter((part) => part !== first)];
  }

  private prepare(name: unknown, data: unknown, opts: JobOptions, at: string): { job: NewJob; opts: JobOptions; data: unknown } {
    if (typeof name !== 'string' || name.length === 0) throw new EchoMQOptionError(`${at}: job name`, `must be a non-empty string, got ${describe(name)}`);
    validateJobOptions(opts, `${at}: opts.`);
    const merged: JobOptions = { ...this.options.defaultJobOptions, ...opts };
    const { jobId, ...stored } = merged;
    if (jobId !== undefined) assertCustomIdForPartitions(jobId, this.parts.length, `${at}: opts.jobId`);
    const job: NewJob = {
      customId: jobId,
      name,
      data: toJson(data, `${at}: data`, this.options.maxDataSize),
      opts: JSON.stringify(stored),
      timestamp: Date.now(),
      delay: merged.delay ?? 0,
      priority: merged.priority ?? 0,
      lifo: merged.lifo === true,
    };
    return { job, opts: merged, data: data === undefined ? {} : data };
  }

  private fromPrepared(part: QueuePart, jobId: string, prepared: { job: NewJob; opts: JobOptions; data: unknown }): Job<Data, Result> {
    const { jobId: _id, ...stored } = prepared.opts;
    return new Job<Data, Result>(part.context, jobId, prepared.job.name, prepared.data as Data, stored, prepared.job.timestamp);
  }

  /** The job an add found already there, in the partition the add went to (its id may be in others too). */
  private async getExisting(part: QueuePart, jobId: string): Promise<Job<Data, Result>> {
    const [job] = await this.hashes(part, [jobId]);
    if (!job) throw new EchoMQError(-1, jobId, 'addJob-9.lua', 'it existed when added, and was removed since');
    return job;
  }

  /** The ids of each state of one part, `start` to `end` per state, in getJobs' order. */
  private async idsPerState(part: QueuePart, states: ReturnType<typeof parseJobStates>, start: number, end: number): Promise<string[][]> {
    const pipeline = this.client.pipeline();
    for (const state of states) part.idsQueued(pipeline, state, start, end);
    const replies = (await pipeline.exec()) ?? [];
    return replies.map(([error, reply], i) => {
      if (error) throw error;
      const found = reply as string[];
      return LIST_STATES.has(states[i]) ? found.reverse() : found;
    });
  }

  /** The jobs of these ids that still exist, in the same order. */
  private async present(part: QueuePart, ids: string[]): Promise<Array<Job<Data, Result>>> {
    const jobs = await this.hashes(part, ids);
    return jobs.filter((job): job is Job<Data, Result> => job !== undefined);
  }

  private async hashes(part: QueuePart, ids: string[]): Promise<Array<Job<Data, Result> | undefined>> {
    if (ids.length === 0) return [];
    const pipeline = this.client.pipeline();
    for (const id of ids) pipeline.hgetall(part.keys.job(id));
    const replies = (await pipeline.exec()) ?? [];
    return replies.map(([error, hash], i) => {
      if (error) throw error;
      const fields = hash as Record<string, string>;
      return Object.keys(fields).length === 0 ? undefined : Job.fromHash<Data, Result>(part.context, ids[i], fields);
    });
  }
}

function activeRefusal(): EchoMQError {
  return new EchoMQError(-3, '*', 'obliterate-2.lua', 'the queue has active jobs; pass { force: true } to delete them too');
}

/** A getJobs bound: a whole number, negative counting from the end as in LRANGE. */
function assertIndex(value: unknown, field: string): void {
  if (!Number.isInteger(value)) throw new EchoMQOptionError(field, `must be a whole number, got ${describe(value)}`);
}
