import { EchoMQError, EchoMQOptionError } from '../protocol/errors.js';
import { Keys, type JobState } from '../protocol/keys.js';
import { assertQueueName, describe } from '../protocol/names.js';
import type { RedisClient } from '../protocol/script.js';
import { ADD_BATCH, Scripts, type NewJob } from '../protocol/scripts.js';
import { CallBatcher } from './call-batcher.js';
import { closeClient, connect } from './connection.js';
import { canNameJob, Job, type JobContext } from './job.js';
import { JOB_STATES, parseJobState, parseJobStates, type JobStateName } from './job-state.js';
import { resolveQueueOptions, validateJobOptions, type JobOptions, type QueueOptions, type ResolvedQueueOptions } from './options.js';
import { explainRedisError } from './redis-health.js';
import { toJson } from './serialize.js';

/** How many jobs each state holds, keyed by the name the caller used (`waiting` or `wait`). */
export type JobCounts = Record<JobStateName, number>;

interface AddedJob {
  jobId: string;
  created: boolean;
}

const LIST_STATES = new Set<JobState>(['wait', 'paused', 'active']);

/**
 * Queue: adds jobs and reads and manages a queue's state. It holds one shared connection and
 * never blocks on it.
 */
export class Queue<Data = unknown, Result = unknown> {
  readonly keys: Keys;
  readonly client: RedisClient;
  readonly options: ResolvedQueueOptions;
  private readonly scripts: Scripts;
  private readonly ownsClient: boolean;
  private readonly context: JobContext;
  private readonly adds: CallBatcher<NewJob, AddedJob>;
  private closing?: Promise<void>;

  constructor(readonly name: string, opts: QueueOptions = {}) {
    assertQueueName(name);
    this.options = resolveQueueOptions(opts);
    this.keys = new Keys(name, this.options.prefix);
    const { client, owned } = connect(opts.connection);
    this.client = client;
    this.ownsClient = owned;
    this.scripts = new Scripts(client, this.keys, this.options.maxEvents);
    this.context = { queueName: name, keys: this.keys, scripts: this.scripts, client };
    // add() calls made while another is in flight go together as one addJobs-9 call at the end
    // of the turn: a burst of concurrent adds costs Redis one script call per 500 jobs, not one
    // per job. A lone add (none in flight) is sent at once, so its latency is unchanged.
    this.adds = new CallBatcher<NewJob, AddedJob>(
      (batch) => (batch.length === 1 ? this.scripts.addJob(batch[0]).then((added) => [added]) : this.scripts.addJobs(batch)),
      ADD_BATCH,
      (pending, inFlight) => pending === 1 && inFlight === 0,
    );
  }

  /** Adds a job. With a `jobId` that already exists, returns the existing job and writes nothing. */
  async add(name: string, data: Data, opts: JobOptions = {}): Promise<Job<Data, Result>> {
    const prepared = this.prepare(name, data, opts, 'add');
    this.assertOpen();
    const { jobId, created } = await this.adds.submit(prepared.job).catch((error: unknown) => {
      throw explainRedisError(error, `add of job "${name}" to queue ${this.name}`);
    });
    return created ? this.fromPrepared(jobId, prepared) : this.getExisting(jobId);
  }

  /**
   * Adds many jobs in one round trip. Every job is validated before anything is sent: one bad
   * job refuses the whole batch.
   */
  async addBulk(jobs: Array<{ name: string; data: Data; opts?: JobOptions }>): Promise<Array<Job<Data, Result>>> {
    if (!Array.isArray(jobs)) throw new EchoMQOptionError('addBulk', `takes an array of { name, data, opts }, got ${describe(jobs)}`);
    const prepared = jobs.map((job, i) => this.prepare(job?.name, job?.data, job?.opts ?? {}, `addBulk[${i}]`));
    this.assertOpen();
    const action = `addBulk of ${jobs.length} jobs to queue ${this.name}`;
    const results = await this.scripts.addJobs(prepared.map((p) => p.job)).catch((error: unknown) => {
      throw explainRedisError(error, action);
    });
    return Promise.all(results.map(async (result, i) => {
      if (result instanceof Error) throw explainRedisError(result, action);
      return result.created ? this.fromPrepared(result.jobId, prepared[i]) : this.getExisting(result.jobId);
    }));
  }

  /** The job of this id; undefined when there is none, or the id cannot name a job (e.g. `wait`). */
  async getJob(jobId: string): Promise<Job<Data, Result> | undefined> {
    if (!canNameJob(jobId)) return undefined;
    const hash = await this.client.hgetall(this.keys.job(jobId));
    if (!hash || Object.keys(hash).length === 0) return undefined;
    return Job.fromHash<Data, Result>(this.context, jobId, hash);
  }

  /**
   * Jobs in the given states, in the order they will run (wait, paused, active, prioritized,
   * delayed: next first) or newest first (completed, failed), `start` to `end` inclusive per state.
   * `waiting` is taken for `wait`; an unknown state is refused (EchoMQOptionError).
   */
  async getJobs(states: JobStateName | JobStateName[] = [...JOB_STATES], start = 0, end = -1): Promise<Array<Job<Data, Result>>> {
    const list = parseJobStates(states);
    assertIndex(start, 'start');
    assertIndex(end, 'end');
    const pipeline = this.client.pipeline();
    for (const state of list) {
      const key = this.keys.state(state);
      if (LIST_STATES.has(state)) pipeline.lrange(key, -end - 1, -start - 1);
      else if (state === 'completed' || state === 'failed') pipeline.zrevrange(key, start, end);
      else pipeline.zrange(key, String(start), String(end));
    }
    const replies = (await pipeline.exec()) ?? [];
    const ids: string[] = [];
    replies.forEach(([error, reply], i) => {
      if (error) throw error;
      const found = reply as string[];
      ids.push(...(LIST_STATES.has(list[i]) ? found.reverse() : found));
    });
    const jobs = await this.hashes(ids);
    return jobs.filter((job): job is Job<Data, Result> => job !== undefined);
  }

  /**
   * How many jobs each state holds (every state when none is named). The answer is keyed by the
   * names asked for: `getJobCounts('waiting')` answers `{ waiting: n }`. An unknown state is refused.
   */
  async getJobCounts(...states: JobStateName[]): Promise<Partial<JobCounts>> {
    const names: JobStateName[] = states.length > 0 ? states : [...JOB_STATES];
    const list = parseJobStates(names);
    const pipeline = this.client.pipeline();
    for (const state of list) {
      if (LIST_STATES.has(state)) pipeline.llen(this.keys.state(state));
      else pipeline.zcard(this.keys.state(state));
    }
    const replies = (await pipeline.exec()) ?? [];
    const counts: Partial<JobCounts> = {};
    names.forEach((name, i) => {
      const [error, reply] = replies[i];
      if (error) throw error;
      counts[name] = reply as number;
    });
    return counts;
  }

  /** Stops workers from taking new jobs; running jobs go on to their end. */
  async pause(): Promise<void> {
    await this.scripts.pause('pause');
  }

  async resume(): Promise<void> {
    await this.scripts.pause('resume');
  }

  async isPaused(): Promise<boolean> {
    return (await this.client.hexists(this.keys.meta, 'paused')) === 1;
  }

  /**
   * Removes every waiting job (and delayed ones with `delayed`); active and finished ones stay.
   * One drain-5 call removes at most 1,000 jobs; it loops until none is left.
   */
  async drain(delayed = false): Promise<void> {
    while ((await this.scripts.drain(delayed)) > 0);
  }

  /**
   * Removes up to `limit` jobs (0 = no limit) of one state that are older than `grace` ms
   * (finishedOn for finished jobs, creation otherwise); jobs a worker holds stay. Returns the
   * removed ids. It goes through the state one window of ids per cleanJobsInSet-2 call, so no call
   * holds Redis (and every worker's heartbeat) for long, whatever the state's size; jobs that move
   * while it runs may be missed.
   */
  async clean(grace: number, limit = 0, stateName: JobStateName = 'completed'): Promise<string[]> {
    if (!Number.isInteger(grace) || grace < 0) throw new EchoMQOptionError('grace', `must be a whole number of ms >= 0, got ${describe(grace)}`);
    if (!Number.isInteger(limit) || limit < 0) throw new EchoMQOptionError('limit', `must be a whole number >= 0, got ${describe(limit)}`);
    const state = parseJobState(stateName, 'state');
    const cutoff = Date.now() - grace;
    const removed: string[] = [];
    let rank = 0;
    do {
      const swept = await this.scripts.cleanJobsInSet(state, cutoff, limit === 0 ? 0 : limit - removed.length, rank);
      removed.push(...swept.removed);
      rank = swept.nextRank;
    } while (rank >= 0 && (limit === 0 || removed.length < limit));
    return removed;
  }

  /**
   * Deletes the queue and all its jobs. Refuses while jobs are active, unless `force`. One
   * obliterate-2 call deletes at most 1,000 jobs; it loops until the queue is gone.
   */
  async obliterate(opts: { force?: boolean } = {}): Promise<void> {
    for (;;) {
      const reply = await this.scripts.obliterate(opts.force === true);
      if (reply === 1) return;
      if (reply === -3) throw new EchoMQError(-3, '*', 'obliterate-2.lua', 'the queue has active jobs; pass { force: true } to delete them too');
    }
  }

  /** Closes the queue's connection if the queue created it. Adding afterwards is refused. */
  close(): Promise<void> {
    this.adds.flush(); // adds of this turn go before the QUIT
    this.closing ??= this.ownsClient ? closeClient(this.client) : Promise.resolve();
    return this.closing;
  }

  private assertOpen(): void {
    if (this.closing) throw new Error(`queue ${this.name} is closed: it takes no more jobs`);
  }

  private prepare(name: unknown, data: unknown, opts: JobOptions, at: string): { job: NewJob; opts: JobOptions; data: unknown } {
    if (typeof name !== 'string' || name.length === 0) throw new EchoMQOptionError(`${at}: job name`, `must be a non-empty string, got ${describe(name)}`);
    validateJobOptions(opts, `${at}: opts.`);
    const merged: JobOptions = { ...this.options.defaultJobOptions, ...opts };
    const { jobId, ...stored } = merged;
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
    return { job, opts: stored, data: data === undefined ? {} : data };
  }

  private fromPrepared(jobId: string, prepared: { job: NewJob; opts: JobOptions; data: unknown }): Job<Data, Result> {
    return new Job<Data, Result>(this.context, jobId, prepared.job.name, prepared.data as Data, prepared.opts, prepared.job.timestamp);
  }

  private async getExisting(jobId: string): Promise<Job<Data, Result>> {
    const job = await this.getJob(jobId);
    if (!job) throw new EchoMQError(-1, jobId, 'addJob-9.lua', 'it existed when added, and was removed since');
    return job;
  }

  private async hashes(ids: string[]): Promise<Array<Job<Data, Result> | undefined>> {
    if (ids.length === 0) return [];
    const pipeline = this.client.pipeline();
    for (const id of ids) pipeline.hgetall(this.keys.job(id));
    const replies = (await pipeline.exec()) ?? [];
    return replies.map(([error, hash], i) => {
      if (error) throw error;
      const fields = hash as Record<string, string>;
      return Object.keys(fields).length === 0 ? undefined : Job.fromHash<Data, Result>(this.context, ids[i], fields);
    });
  }
}

/** A getJobs bound: a whole number, negative counting from the end as in LRANGE. */
function assertIndex(value: unknown, field: string): void {
  if (!Number.isInteger(value)) throw new EchoMQOptionError(field, `must be a whole number, got ${describe(value)}`);
}
