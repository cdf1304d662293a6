import { EchoMQOptionError } from '../../protocol/errors.js';
import type { Keys } from '../../protocol/keys.js';
import { assertQueueName, describe } from '../../protocol/names.js';
import { assertPartitionedName } from '../../protocol/partitions.js';
import type { RedisClient } from '../../protocol/script.js';
import { closeClient, connect } from '../core/connection.js';
import type { JobOptions } from '../core/job-options.js';
import { resolveQueueOptions, type QueueOptions, type ResolvedQueueOptions } from '../core/queue-options.js';
import { FLOW_OPERATIONS } from '../flows/flow-operations.js';
import { removeJobOfFlow } from '../flows/flow-removal.js';
import { JobSchedulers } from '../schedulers/job-schedulers.js';
import { ATTRIBUTES } from '../telemetry/attributes.js';
import { traceAdd } from '../telemetry/producer-span.js';
import { canNameJob, type Job } from '../job/job.js';
import type { RemoveOptions } from '../job/job-context.js';
import { JOB_STATES, parseJobStates, type JobStateName } from '../job/job-state.js';
import { ascendingByDefault } from '../job/partition-order.js';
import { QueuePart } from '../job/queue-part.js';
import { assertIndex, presentJobs, readJobs } from './job-reads.js';
import { listJobs } from './job-listing.js';
import { partitionCountError } from './partition-count.js';
import { PartitionRouter } from './partition-router.js';
import { QueueAdds } from './queue-adds.js';
import { QueueAdmin } from './queue-admin.js';
import { QueueJobControl } from './queue-job-control.js';
import { QueueJobRecords } from './queue-job-records.js';
import { QueueLimits } from './queue-limits.js';

/** How many jobs each state holds, keyed by the name the caller used (`waiting` or `wait`). */
export type JobCounts = Record<JobStateName, number>;

/**
 * Queue: adds jobs and reads and manages a queue's state (BullMQ's per-state shortcuts, such as
 * getWaitingCount, from QueueGetters). It holds one shared connection and
 * never blocks on it. With `partitions: n` it is one queue over n hash tags (QueuePart each):
 * adds are routed to one, reads and management visit all of them.
 */
export class Queue<Data = unknown, Result = unknown> extends QueueAdmin<Data, Result> {
  readonly client: RedisClient;
  readonly options: ResolvedQueueOptions;
  protected readonly parts: QueuePart[];
  /** Where each add goes, and where a job or a deduplication id may be (partition-router.ts). */
  protected readonly router: PartitionRouter;
  /** add and addBulk after their spans (queue-adds.ts). */
  private readonly adds: QueueAdds<Data, Result>;
  private readonly ownsClient: boolean;
  private closing?: Promise<void>;
  /** A partitioned queue's first add checks its count against the one in Redis (partition-count.ts). */
  private countChecked?: Promise<void>;
  protected readonly schedulers: JobSchedulers<Data, Result>;
  protected readonly limits: QueueLimits;
  protected readonly control: QueueJobControl;
  protected readonly records: QueueJobRecords;

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
    this.adds = new QueueAdds<Data, Result>({
      name, client, options: this.options, parts: this.parts, router: this.router, addTarget: { queueName: name, partitions, options: this.options },
      assertOpen: () => this.assertOpen(), checkCount: () => this.checkCount(),
    });
    this.limits = new QueueLimits(client, this.parts.map((part) => part.keys), name);
    this.schedulers = new JobSchedulers<Data, Result>({
      parts: this.parts,
      defaults: this.options.defaultJobOptions,
      maxDataSize: this.options.maxDataSize,
      beforeWrite: async () => {
        this.assertOpen();
        if (this.parts.length > 1) await this.checkCount();
      },
    });
    const jobHost = { parts: this.parts, partsThatMayHold: (jobId: string) => this.router.partsThatMayHold(jobId) };
    this.control = new QueueJobControl(jobHost);
    this.records = new QueueJobRecords(jobHost);
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

  /**
   * A key of the queue by its last part (BullMQ's toKey): `P:{Q}:<type>`, a job's hash for a job
   * id, `events` for its stream. For a partitioned queue, partition 0's (use partitionKeys).
   */
  toKey(type: string): string {
    return this.parts[0].keys.base + type;
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
  async add(name: string, data: Data, opts: JobOptions = {}): Promise<Job<Data, Result>> {
    const { telemetry } = this.options;
    const job = telemetry
      ? await traceAdd(telemetry, { operation: 'add', destination: this.name }, (metadata) => this.adds.one(name, data, opts, metadata),
        (added) => ({ [ATTRIBUTES.messageId]: added.id, [ATTRIBUTES.jobName]: added.name }))
      : await this.adds.one(name, data, opts);
    this.emit('waiting', job);
    return job;
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
        (metadata) => this.adds.many(jobs, metadata));
    }
    return this.adds.many(jobs);
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
        if (outcome === 'removed') {
          this.emit('removed', jobId);
          return 1;
        }
        if (outcome === 'locked') return 0;
      }
    }
    return 0;
  }

  /** The job of this id; undefined when there is none, or the id cannot name a job (e.g. `wait`). */
  async getJob(jobId: string): Promise<Job<Data, Result> | undefined> {
    if (!canNameJob(jobId)) return undefined;
    for (const candidates of this.router.partsThatMayHold(jobId)) {
      const found = await Promise.all(candidates.map((part) => readJobs<Data, Result>(this.client, part, [jobId]).then(([job]) => job)));
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
    return listJobs(this.parts, list, start, end, ascending, (part, ids) => presentJobs<Data, Result>(this.client, part, ids));
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
   * Resolves once the queue's connection answers (BullMQ's name): a PING, which waits for the
   * connection to come up (EchoMQ's connections never give up on a command).
   */
  async waitUntilReady(): Promise<void> {
    await this.client.ping();
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

}
