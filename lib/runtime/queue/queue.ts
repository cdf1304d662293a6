import { EchoMQError, EchoMQOptionError } from '../../protocol/errors.js';
import type { Keys } from '../../protocol/keys.js';
import { assertDeduplicationId, assertQueueName, describe } from '../../protocol/names.js';
import { assertPartitionedName } from '../../protocol/partitions.js';
import type { RedisClient } from '../../protocol/script.js';
import type { AddedJob } from '../../protocol/script-shapes.js';
import { closeClient, connect } from '../core/connection.js';
import { canNameJob, Job } from '../job/job.js';
import { JOB_STATES, parseJobState, parseJobStates, type JobStateName } from '../job/job-state.js';
import { resolveQueueOptions, type QueueOptions, type ResolvedQueueOptions } from '../core/queue-options.js';
import { type JobOptions } from '../core/job-options.js';
import { QueuePart } from '../job/queue-part.js';
import { PartitionRouter } from './partition-router.js';
import { prepareJob, type AddTarget, type Prepared } from './prepare-job.js';
import { QueueGetters } from './queue-getters.js';
import { QueueJobControl, type JobLogs, type PromoteJobsOptions, type RetryJobsOptions } from './queue-job-control.js';
import { partitionCountError } from './partition-count.js';
import { listJobs } from './job-listing.js';
import { ascendingByDefault } from '../job/partition-order.js';
import { explainRedisError } from '../core/redis-health.js';
import { deleteDeduplicationKeys } from './deduplication-keys.js';
import { FlowScripts } from '../../protocol/flow-scripts.js';
import { parentPolicyOf } from '../flows/flow-tree.js';
import { checkChildAdds } from '../flows/child-add-checks.js';
import { addChild, type CheckedParent } from '../flows/step-jobs.js';
import { removeJobOfFlow } from '../flows/flow-removal.js';
import { FLOW_OPERATIONS } from '../flows/flow-operations.js';
import { type RemoveOptions } from '../job/job-context.js';
import { JobSchedulers, type JobSchedulerJson } from '../schedulers/job-schedulers.js';
import type { RepeatOptions } from '../schedulers/repeat-options.js';
import type { JobSchedulerTemplate } from '../schedulers/template.js';
import type { RateLimit } from '../../protocol/script-shapes.js';
import type { WorkerInfo } from '../../protocol/queue-limits.js';
import { QueueLimits } from './queue-limits.js';
import { listWorkers } from './queue-workers.js';
import { readMetrics, readMetricsTotals, type Metrics, type MetricsType } from '../../protocol/metrics.js';
import { assertPrometheusLabels, queueMetricsText, PROMETHEUS_STATES } from './prometheus-text.js';
import { traceAdd } from '../telemetry/producer-span.js';
import { ATTRIBUTES } from '../telemetry/attributes.js';

/** How many jobs each state holds, keyed by the name the caller used (`waiting` or `wait`). */
export type JobCounts = Record<JobStateName, number>;

/**
 * Queue: adds jobs and reads and manages a queue's state (BullMQ's per-state shortcuts, such as
 * getWaitingCount, from QueueGetters). It holds one shared connection and
 * never blocks on it. With `partitions: n` it is one queue over n hash tags (QueuePart each):
 * adds are routed to one, reads and management visit all of them.
 */
export class Queue<Data = unknown, Result = unknown> extends QueueGetters<Data, Result> {
  readonly client: RedisClient;
  readonly options: ResolvedQueueOptions;
  private readonly parts: QueuePart[];
  /** Where each add goes, and where a job or a deduplication id may be (partition-router.ts). */
  private readonly router: PartitionRouter;
  /** What each add's job preparation reads of this queue (prepare-job.ts). */
  private readonly addTarget: AddTarget;
  private readonly ownsClient: boolean;
  private closing?: Promise<void>;
  /** A partitioned queue's first add checks its count against the one in Redis (partition-count.ts). */
  private countChecked?: Promise<void>;
  private readonly schedulers: JobSchedulers<Data, Result>;
  private readonly limits: QueueLimits;
  private readonly control: QueueJobControl;

  constructor(readonly name: string, opts: QueueOptions = {}) {
    super();
    assertQueueName(name);
    this.options = resolveQueueOptions(opts);
    const { partitions, prefix, maxEvents, maxDataSize } = this.options;
    assertPartitionedName(name, partitions);
    const { client, owned } = connect(opts.connection);
    this.client = client;
    this.ownsClient = owned;
    this.parts = Array.from({ length: partitions }, (_, i) => new QueuePart({ client, name, index: i, partitions, prefix, maxEvents, maxDataSize, flowOperations: FLOW_OPERATIONS }));
    this.router = new PartitionRouter(this.parts);
    this.addTarget = { queueName: name, partitions, options: this.options };
    this.limits = new QueueLimits(client, this.parts[0].keys, name, partitions);
    this.schedulers = new JobSchedulers<Data, Result>({
      parts: this.parts,
      defaults: this.options.defaultJobOptions,
      maxDataSize: this.options.maxDataSize,
      beforeWrite: async () => {
        this.assertOpen();
        if (this.parts.length > 1) await this.checkCount();
      },
    });
    this.control = new QueueJobControl({ parts: this.parts, partsThatMayHold: (jobId) => this.router.partsThatMayHold(jobId) });
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

  /**
   * Adds a job. With a `jobId` that already exists, returns the existing job and writes nothing.
   * With a `deduplication` id that is held, returns the job that holds it and writes nothing but
   * the `deduplicated` event (docs/deduplication.md).
   */
  add(name: string, data: Data, opts: JobOptions = {}): Promise<Job<Data, Result>> {
    const { telemetry } = this.options;
    if (telemetry) {
      return traceAdd(telemetry, { operation: 'add', destination: this.name }, (metadata) => this.addOne(name, data, opts, metadata),
        (job) => ({ [ATTRIBUTES.messageId]: job.id, [ATTRIBUTES.jobName]: job.name }));
    }
    return this.addOne(name, data, opts);
  }

  /**
   * Adds many jobs in one round trip (one per partition they go to, in parallel). Every job is
   * validated before anything is sent: one bad job refuses the whole batch.
   */
  addBulk(jobs: Array<{ name: string; data: Data; opts?: JobOptions }>): Promise<Array<Job<Data, Result>>> {
    const { telemetry } = this.options;
    if (telemetry) {
      // OpenTelemetry's conventions: no batch count on an operation of a single message.
      const count = Array.isArray(jobs) && jobs.length > 1 ? jobs.length : undefined;
      return traceAdd(telemetry, { operation: 'addBulk', destination: this.name, attributes: { [ATTRIBUTES.batchCount]: count } },
        (metadata) => this.addMany(jobs, metadata));
    }
    return this.addMany(jobs);
  }

  /** add() after its span, if any: `metadata` is the trace context the job carries (opts.telemetry). */
  private async addOne(name: string, data: Data, opts: JobOptions, metadata?: string): Promise<Job<Data, Result>> {
    const prepared = prepareJob(this.addTarget, name, data, opts, 'add', metadata);
    this.assertOpen();
    if (prepared.parent) {
      await this.checkChildAdds([prepared], `add of job "${name}" with a parent to queue ${this.name}`);
      return this.addWithParent(prepared);
    }
    if (this.parts.length > 1) await this.checkCount();
    const part = this.router.route(prepared.opts);
    const added = await part.adds.submit(prepared.job).catch((error: unknown) => {
      throw explainRedisError(error, `add of job "${name}" to queue ${this.name}`);
    });
    return added.created ? this.fromPrepared(part, added.jobId, prepared) : this.getExisting(part, added, prepared);
  }

  /** addBulk() after its span, if any: every job carries `metadata`, its trace context. */
  private async addMany(jobs: Array<{ name: string; data: Data; opts?: JobOptions }>, metadata?: string): Promise<Array<Job<Data, Result>>> {
    if (!Array.isArray(jobs)) throw new EchoMQOptionError('addBulk', `takes an array of { name, data, opts }, got ${describe(jobs)}`);
    const prepared = jobs.map((job, i) => prepareJob(this.addTarget, job?.name, job?.data, job?.opts ?? {}, `addBulk[${i}]`, metadata));
    this.assertOpen();
    // Children go one by one (each takes three calls over two slots); the others in bulk, as before.
    // Every entry is checked in Redis first (parents, ids): one that cannot be added writes nothing.
    if (prepared.some((p) => p.parent)) {
      await this.checkChildAdds(prepared, `addBulk of ${jobs.length} jobs to queue ${this.name}`);
      const plain = jobs.filter((_, i) => !prepared[i].parent);
      const added = plain.length > 0 ? await this.addMany(plain, metadata) : [];
      let next = 0;
      return Promise.all(prepared.map((p) => (p.parent ? this.addWithParent(p) : Promise.resolve(added[next++]))));
    }
    if (this.parts.length > 1) await this.checkCount();
    const action = `addBulk of ${jobs.length} jobs to queue ${this.name}`;
    const byPart = new Map<QueuePart, number[]>();
    prepared.forEach((p, i) => {
      const part = this.router.route(p.opts);
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
      return result.created ? this.fromPrepared(part, result.jobId, prepared[i]) : this.getExisting(part, result, prepared[i]);
    }));
  }

  /**
   * Removes a job with its flow keys (BullMQ's name and shape): 1 when removed, 0 when there is no
   * such job or a worker holds it. A parent's unsettled children go too, unless `removeChildren`
   * is false; a child's parent drops it (docs/flows.md, "Removing jobs of a flow").
   */
  async remove(jobId: string, opts: RemoveOptions = {}): Promise<0 | 1> {
    if (!canNameJob(jobId)) return 0;
    for (const candidates of this.router.partsThatMayHold(jobId)) {
      for (const part of candidates) {
        const outcome = await removeJobOfFlow(part.context, jobId, opts);
        if (outcome === 'removed') return 1;
        if (outcome === 'locked') return 0;
      }
    }
    return 0;
  }

  /** The job of this id; undefined when there is none, or the id cannot name a job (e.g. `wait`). */
  async getJob(jobId: string): Promise<Job<Data, Result> | undefined> {
    if (!canNameJob(jobId)) return undefined;
    for (const candidates of this.router.partsThatMayHold(jobId)) {
      const found = await Promise.all(candidates.map((part) => this.hashes(part, [jobId]).then(([job]) => job)));
      const job = found.find((j) => j !== undefined);
      if (job) return job;
    }
    return undefined;
  }

  /**
   * Jobs in the given states, `start` to `end` inclusive per state. Without `asc`, in the order they
   * will run (wait, paused, active, prioritized, delayed: next first) or newest first (completed,
   * failed); `asc` true puts every state oldest (or next to run) first, false newest (or last to
   * run) first, as BullMQ's `asc`. `waiting` is taken for `wait`; an unknown state is refused
   * (EchoMQOptionError). Across the partitions of a partitioned queue, jobs are ordered by when they
   * were added (wait, paused, active), their priority, their due time (delayed) or when they
   * finished (completed, failed).
   */
  async getJobs(states: JobStateName | JobStateName[] = [...JOB_STATES], start = 0, end = -1, asc?: boolean): Promise<Array<Job<Data, Result>>> {
    const list = parseJobStates(states);
    assertIndex(start, 'start');
    assertIndex(end, 'end');
    if (asc !== undefined && typeof asc !== 'boolean') throw new EchoMQOptionError('asc', `must be true, false or left out, got ${describe(asc)}`);
    const ascending = list.map((state) => asc ?? ascendingByDefault(state));
    return listJobs(this.parts, list, start, end, ascending, (part, ids) => this.present(part, ids));
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

  /**
   * The queue in the Prometheus text format (BullMQ's name and format): a gauge `echomq_job_count`
   * with `queue` and `state` labels (BullMQ's state names: `waiting` for wait), and the counters
   * `echomq_job_completed_total` and `echomq_job_failed_total` (getMetrics' `meta.count`: 0 unless
   * workers have `metrics`), with the extra `labels` on every sample. One pipelined round trip per
   * partition and one for the counters, read only when called: serve it from a /metrics route.
   * docs/observability.md.
   */
  async exportPrometheusMetrics(labels?: Record<string, string>): Promise<string> {
    assertPrometheusLabels(labels);
    const [counts, finished] = await Promise.all([this.getJobCounts(...PROMETHEUS_STATES), readMetricsTotals(this.client, this.parts[0].keys)]);
    return queueMetricsText(this.name, counts as Record<string, number>, finished, labels);
  }

  /**
   * Cancels a job from any process: one still to run (waiting, paused, prioritized, delayed) fails
   * at once as cancelled, not retried (its removeOnFail applies); a running one, on any worker,
   * has its signal aborted with a JobCancelledError within one lockRenewTime and fails as
   * cancelled, not retried. True when it was cancelled or its worker told; false when there is no
   * such job or it has already finished. `reason` (at most 1,000 characters) goes into the
   * failedReason: `job 7 was cancelled: <reason>`. docs/locks.md, "Cancelling a job".
   */
  cancelJob(jobId: string, reason?: string): Promise<boolean> {
    return this.control.cancelJob(jobId, reason);
  }

  /** Jobs still to run: waiting, paused, prioritized and delayed (BullMQ's count()). */
  count(): Promise<number> {
    return this.control.count();
  }

  /** Ready jobs per priority (0: those without one, in wait or paused), keyed by priority (BullMQ's shape). */
  getCountsPerPriority(priorities: number[]): Promise<Record<string, number>> {
    return this.control.getCountsPerPriority(priorities);
  }

  /** A job's log lines, `start` to `end`, oldest first unless `asc` is false, and how many it holds (BullMQ's shape). */
  getJobLogs(jobId: string, start = 0, end = -1, asc = true): Promise<JobLogs> {
    return this.control.getJobLogs(jobId, start, end, asc);
  }

  /**
   * Sends finished jobs (`state` failed, the default, or completed) that finished at or before
   * `timestamp` (default now) back to wait, as job.retry() does one, `count` (default 1,000) per
   * script call until none is left. docs/job-control.md.
   */
  retryJobs(opts?: RetryJobsOptions): Promise<void> {
    return this.control.retryJobs(opts);
  }

  /** Makes every delayed job ready now, `count` (default 1,000) per script call. docs/job-control.md. */
  promoteJobs(opts?: PromoteJobsOptions): Promise<void> {
    return this.control.promoteJobs(opts);
  }

  /**
   * Creates a job scheduler, or replaces its schedule and job template (BullMQ's name and shape).
   * Calling it again with the same arguments changes nothing, so every instance of an app may call
   * it at boot. Returns the scheduler's next job (delayed until its slot), or undefined when its
   * limit is reached. docs/schedulers.md.
   */
  upsertJobScheduler(jobSchedulerId: string, repeat: RepeatOptions, template?: JobSchedulerTemplate<Data>): Promise<Job<Data, Result> | undefined> {
    return this.schedulers.upsert(jobSchedulerId, repeat, template);
  }

  /** A job scheduler (its schedule, template, next slot and count of jobs made), or undefined. */
  getJobScheduler(jobSchedulerId: string): Promise<JobSchedulerJson<Data> | undefined> {
    return this.schedulers.get(jobSchedulerId);
  }

  /** Job schedulers by the due time of their next job, latest first unless `asc`, `start` to `end` inclusive. */
  getJobSchedulers(start = 0, end = -1, asc = false): Promise<Array<JobSchedulerJson<Data>>> {
    return this.schedulers.list(start, end, asc);
  }

  getJobSchedulersCount(): Promise<number> {
    return this.schedulers.count();
  }

  /** Removes a job scheduler and its next job unless that job is running; false when there was none. */
  removeJobScheduler(jobSchedulerId: string): Promise<boolean> {
    return this.schedulers.remove(jobSchedulerId);
  }

  /**
   * At most `concurrency` jobs active at once across every worker of the queue (BullMQ's name); a
   * worker's own `concurrency` still caps that worker. Workers learn it within one lockRenewTime.
   * Refused on a partitioned queue (use partitionConcurrency). docs/limits.md.
   */
  setGlobalConcurrency(concurrency: number): Promise<void> {
    return this.limits.setGlobalConcurrency(concurrency);
  }

  /** The queue-wide concurrency, or undefined when none is set. */
  getGlobalConcurrency(): Promise<number | undefined> {
    return this.limits.getGlobalConcurrency();
  }

  /** Lifts the queue-wide concurrency; workers learn it within one lockRenewTime. */
  removeGlobalConcurrency(): Promise<void> {
    return this.limits.removeGlobalConcurrency();
  }

  /**
   * At most `max` jobs taken per `duration` ms across every worker of the queue (per partition of a
   * partitioned queue); while set it wins over the workers' `limiter`. Workers learn it within one
   * lockRenewTime. docs/limits.md.
   */
  setGlobalRateLimit(max: number, duration: number): Promise<void> {
    return this.limits.setGlobalRateLimit(max, duration);
  }

  /** The queue-wide rate limit, or undefined when none is set. */
  getGlobalRateLimit(): Promise<RateLimit | undefined> {
    return this.limits.getGlobalRateLimit();
  }

  /** Lifts the queue-wide rate limit (the workers' `limiter` applies again); workers learn it within one lockRenewTime. */
  removeGlobalRateLimit(): Promise<void> {
    return this.limits.removeGlobalRateLimit();
  }

  /**
   * Every live worker of the queue, in every process (id, name, host, pid, concurrency, jobs
   * running, start, last heartbeat), oldest first: from the registry the workers' heartbeats keep.
   * A closed worker is gone at once; one that stopped without a close (a killed process) within
   * 2 x its lockRenewTime + 1 s. docs/limits.md.
   */
  getWorkers(): Promise<WorkerInfo[]> {
    return listWorkers(this.client, this.parts[0].keys);
  }

  /**
   * The per-minute counts of the jobs completed or failed (for good), as workers with `metrics`
   * record them (BullMQ's name and shape): `data` holds closed minutes, newest first, `start` to
   * `end` (inclusive, negative from the end as LRANGE); `meta.count` every job counted;
   * `count - prevCount` the open minute's jobs, from `prevTS`. All zeros when no worker records
   * metrics. A partitioned queue keeps them in partition 0's slot. A bad `type`, `start` or `end`
   * rejects the promise (EchoMQOptionError) before Redis is read. docs/observability.md, "Metrics".
   */
  async getMetrics(type: MetricsType, start = 0, end = -1): Promise<Metrics> {
    if (type !== 'completed' && type !== 'failed') throw new EchoMQOptionError('type', `is ${describe(type)}; metrics are kept for "completed" and "failed"`);
    assertIndex(start, 'start');
    assertIndex(end, 'end');
    return readMetrics(this.client, this.parts[0].keys, type, start, end);
  }

  /**
   * The id of the job that holds a deduplication id, or null when it is free (BullMQ's name and
   * shape). Read by the rule every add applies: a simple-mode id whose job completed or failed is
   * free. A partitioned queue looks in the partition the id routes to first, then in the others
   * (adds with a partitionKey put it in that key's partition).
   */
  async getDeduplicationJobId(deduplicationId: string): Promise<string | null> {
    assertDeduplicationId(deduplicationId);
    for (const candidates of this.router.partsThatMayHoldDeduplication(deduplicationId)) {
      const found = await Promise.all(candidates.map((part) => part.scripts.getDeduplicationJobId(deduplicationId)));
      const holder = found.find((jobId) => jobId !== null);
      if (holder !== undefined) return holder;
    }
    return null;
  }

  /**
   * Frees a deduplication id at once, whatever its mode and its job (which stays): the next add
   * with it is added. Returns how many keys it deleted (BullMQ's shape): 0 or 1, or up to one per
   * partition of a partitioned queue.
   */
  async removeDeduplicationKey(deduplicationId: string): Promise<number> {
    assertDeduplicationId(deduplicationId);
    const deleted = await Promise.all(this.parts.map((part) => this.client.del(part.keys.deduplication(deduplicationId))));
    return deleted.reduce((sum, n) => sum + n, 0);
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
   * queue checks every partition for active jobs before it deletes anything. Deduplication keys,
   * which no script can list, go last, found by SCAN (deduplication-keys.ts).
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
    await deleteDeduplicationKeys(this.client, this.parts.map((part) => part.keys));
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

  /** What adds with `parent` are checked for in Redis before anything is written (child-add-checks.ts). */
  private async checkChildAdds(prepared: Prepared[], action: string): Promise<void> {
    const entries = prepared.map((p) => ({ at: p.at, customId: p.job.customId, parent: p.parent }));
    await checkChildAdds(this.client, this.parts[0].keys, this.name, entries).catch((error: unknown) => {
      if (error instanceof EchoMQError || error instanceof EchoMQOptionError) throw error;
      throw explainRedisError(error, action);
    });
  }

  /** A child of a job (opts.parent): addChild's three steps over the two slots (docs/flows.md, "Step jobs"). */
  private async addWithParent(prepared: Prepared): Promise<Job<Data, Result>> {
    const part = this.parts[0];
    const parent = prepared.parent as CheckedParent;
    const { job } = prepared;
    const action = `add of job "${job.name}" with a parent to queue ${this.name}`;
    try {
      const id = job.customId ?? String(await this.client.incr(part.keys.id));
      const parentKeys = parent.keys;
      const outcome = await addChild({
        queueName: this.name, prefix: this.options.prefix, keys: part.keys, flows: part.flows,
        record: {
          id, name: job.name, data: job.data, opts: job.opts, timestamp: job.timestamp, delay: job.delay, priority: job.priority, lifo: job.lifo,
          parentKey: parentKeys.job(parent.id), parentJson: JSON.stringify({ id: parent.id, queueKey: parentKeys.queueKey }),
          policy: parentPolicyOf(prepared.opts), children: [],
        },
      }, parent, new FlowScripts(this.client, parentKeys, this.options.maxEvents), `${prepared.at}: `);
      if (outcome === 'existed') {
        const [existing] = await this.hashes(part, [id]);
        if (existing) return existing;
        throw new EchoMQError(-1, id, 'addFlowJobs-15.lua', 'it existed when added, and was removed since');
      }
      const added = this.fromPrepared(part, id, prepared);
      added.parentKey = parentKeys.job(parent.id);
      added.parent = { id: parent.id, queueKey: parentKeys.queueKey };
      return added;
    } catch (error) {
      if (error instanceof EchoMQError || error instanceof EchoMQOptionError) throw error;
      throw explainRedisError(error, action);
    }
  }

  private fromPrepared(part: QueuePart, jobId: string, prepared: Prepared): Job<Data, Result> {
    const { jobId: _id, ...stored } = prepared.opts;
    const job = new Job<Data, Result>(part.context, jobId, prepared.job.name, prepared.data as Data, stored, prepared.job.timestamp);
    if (prepared.job.deduplication) job.deduplicationId = prepared.job.deduplication.id;
    return job;
  }

  /**
   * The job an add found already there, in the partition the add went to (its id may be in others
   * too): the job of its custom id, or the one that holds its deduplication id. A throttle-mode id
   * outlives its job: when that job is gone (it finished and was removed), the answer is a Job of
   * its id built from this add, as BullMQ's add answers; `getState()` tells it apart ('unknown').
   */
  private async getExisting(part: QueuePart, added: AddedJob, prepared: Prepared): Promise<Job<Data, Result>> {
    const [job] = await this.hashes(part, [added.jobId]);
    if (job) return job;
    if (added.deduplicated) return this.fromPrepared(part, added.jobId, prepared);
    throw new EchoMQError(-1, added.jobId, 'addJob-9.lua', 'it existed when added, and was removed since');
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
