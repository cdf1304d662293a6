import { BaseAdapter } from '@bull-board/api/dist/queueAdapters/base.js';
import type {
  AppJobScheduler, JobCleanStatus, JobCounts, JobSchedulerRepeatOptions, JobSchedulerUpdateResult, JobStatus, MetricsType,
  ObliterateOptions, QueueAdapterOptions, QueueDefaultJobOptions, QueueJob, QueueJobOptions, QueueMetrics, QueueRateLimit,
  QueueWorker, Status,
} from '@bull-board/api/typings/app';
import { EchoMQOptionError } from '../../protocol/errors.js';
import type { JobState } from '../../protocol/keys.js';
import { schedulerJobId } from '../../protocol/scheduler-ids.js';
import type { JobOptions } from '../../runtime/core/job-options.js';
import type { Job } from '../../runtime/job/job.js';
import type { Queue } from '../../runtime/queue/queue.js';
import type { JobSchedulerJson } from '../../runtime/schedulers/job-schedulers.js';
import { BoardJob } from './board-job.js';
import { boardRedisInfo } from './redis-info.js';
import { BOARD_STATUSES, stateOfStatus, type BoardStatus } from './statuses.js';

/**
 * The minutes of metrics the board reads when it names no range: its chart draws the last hour
 * (the open minute and 59 closed ones). A worker may keep a week (10,080) or more.
 */
export const BOARD_METRICS_MINUTES = 60;

/** What an EchoMQAdapter takes: bull-board's adapter options (readOnlyMode, allowRetries, displayName, ...). */
export type EchoMQAdapterOptions = Partial<QueueAdapterOptions & { allowCompletedRetries: boolean }>;

/**
 * An EchoMQ Queue on bull-board (docs/observability.md, "bull-board"). Every call goes to the
 * Queue's public API: what the board shows is what queue.getJobCounts, getJobs, getJob,
 * getJobLogs, getMetrics, getWorkers... answer, and what it does (retry, promote, remove, clean,
 * pause, drain, obliterate, schedulers, limits) is what the Queue and Job do.
 *
 * It registers as type `bullmq`: the board then offers BullMQ's states and actions, which are
 * ours. Its flow view asks a BullMQ FlowProducer for the tree, which EchoMQ has none of: a job's
 * flow view shows the job alone (getFlowProducer answers null).
 */
export class EchoMQAdapter extends BaseAdapter {
  constructor(readonly queue: Queue<any, any>, options: EchoMQAdapterOptions = {}) {
    super('bullmq', options);
  }

  getName(): string {
    return `${this.prefix}${this.queue.name}`;
  }

  /** `P:{Q}` (partition 0's for a partitioned queue), as a child names its parent's queue. */
  getQueueQualifiedName(): string {
    return this.queue.partitionKeys[0].queueKey;
  }

  getQueueName(): string {
    return this.queue.name;
  }

  /** None: the board's flow view then shows a job without a tree (see the class comment). */
  async getFlowProducer(): Promise<null> {
    return null;
  }

  /** The Redis's INFO; on a Cluster every master's, merged (boardRedisInfo). */
  getRedisInfo(): Promise<string> {
    return boardRedisInfo(this.queue.client);
  }

  getStatuses(): Status[] {
    return ['latest', ...this.getJobStatuses()];
  }

  getJobStatuses(): JobStatus[] {
    return BOARD_STATUSES.map(([status]) => status);
  }

  async getJobCounts(): Promise<JobCounts> {
    const states = BOARD_STATUSES.map(([, state]) => state);
    const counts = await this.queue.getJobCounts(...states);
    const board: Partial<Record<BoardStatus, number>> = {};
    for (const [status, state] of BOARD_STATUSES) board[status] = counts[state] ?? 0;
    return board as JobCounts;
  }

  /**
   * Newest first in every state, as BullMQ's getJobs answers by default and the board pages them:
   * the last added waiting job, the delayed job due last, the latest finished. `start` and `end`
   * count per state (the board's "latest" view asks every state for its first page).
   */
  async getJobs(jobStatuses: JobStatus[], start?: number, end?: number): Promise<QueueJob[]> {
    const states = jobStatuses.map((status) => stateOfStatus(status)).filter((state): state is JobState => state !== undefined);
    if (states.length === 0) return [];
    const jobs = await this.queue.getJobs(states, start ?? 0, end ?? -1, false);
    return jobs.map((job) => this.wrap(job));
  }

  async getJob(id: string): Promise<QueueJob | undefined> {
    const job = await this.queue.getJob(id);
    return job && this.wrap(job);
  }

  async getJobLogs(id: string): Promise<string[]> {
    return (await this.queue.getJobLogs(id)).logs;
  }

  /** queue.getMetrics; without a range, the newest BOARD_METRICS_MINUTES closed minutes (the board asks for none). */
  getMetrics(type: MetricsType, start?: number, end?: number): Promise<QueueMetrics> {
    if (start === undefined && end === undefined) return this.queue.getMetrics(type, 0, BOARD_METRICS_MINUTES - 1);
    return this.queue.getMetrics(type, start ?? 0, end ?? -1);
  }

  async addJob(name: string, data: any, options: QueueJobOptions): Promise<QueueJob> {
    return this.wrap(await this.queue.add(name, data, options as JobOptions));
  }

  /** Every job of the state older than the grace (the board sends 5 s); jobs a worker holds stay. */
  async clean(queueStatus: JobCleanStatus, graceTimeMs: number): Promise<void> {
    const state = stateOfStatus(queueStatus);
    if (!state) throw new EchoMQOptionError('queueStatus', `is "${queueStatus}", not a state of an EchoMQ queue`);
    await this.queue.clean(graceTimeMs, 0, state);
  }

  isPaused(): Promise<boolean> {
    return this.queue.isPaused();
  }

  pause(): Promise<void> {
    return this.queue.pause();
  }

  resume(): Promise<void> {
    return this.queue.resume();
  }

  /** The board's "empty": waiting jobs go (delayed ones stay), as BullMQ's drain. */
  empty(): Promise<void> {
    return this.queue.drain();
  }

  obliterate(opts: ObliterateOptions = {}): Promise<void> {
    return this.queue.obliterate({ force: opts.force === true });
  }

  promoteAll(): Promise<void> {
    return this.queue.promoteJobs();
  }

  override getWorkers(): Promise<QueueWorker[]> {
    return this.queue.getWorkers().then((workers) => workers.map((worker) => ({
      id: worker.id,
      name: worker.name ?? null,
      // The board shows a connection's `ip:port`; a worker of ours is known by its host and process.
      addr: `${worker.host} (pid ${worker.pid})`,
      age: Math.max(0, Math.floor((Date.now() - worker.startedAt) / 1000)),
    })));
  }

  getGlobalConcurrency(): Promise<number | null> {
    return this.queue.getGlobalConcurrency();
  }

  /** 0 or less lifts it (the board's way to say "none"). */
  async setGlobalConcurrency(concurrency: number): Promise<void> {
    if (concurrency <= 0) await this.queue.removeGlobalConcurrency();
    else await this.queue.setGlobalConcurrency(concurrency);
  }

  override get supportsGlobalRateLimit(): boolean {
    return true;
  }

  override getConfiguredRateLimit(): Promise<QueueRateLimit | null> {
    return this.queue.getGlobalRateLimit();
  }

  override setConfiguredRateLimit({ max, duration }: QueueRateLimit): Promise<void> {
    return this.queue.setGlobalRateLimit(max, duration);
  }

  override removeConfiguredRateLimit(): Promise<void> {
    return this.queue.removeGlobalRateLimit();
  }

  override getQueueDefaultJobOptions(): QueueDefaultJobOptions {
    return this.queue.options.defaultJobOptions as QueueDefaultJobOptions;
  }

  removeJobScheduler(id: string): Promise<boolean> {
    return this.queue.removeJobScheduler(id);
  }

  getJobSchedulersCount(): Promise<number> {
    return this.queue.getJobSchedulersCount();
  }

  async getJobSchedulers(): Promise<Array<Omit<AppJobScheduler, 'queueName'>>> {
    const schedulers = await this.queue.getJobSchedulers(0, -1, true);
    return Promise.all(schedulers.map(async (scheduler) => {
      const nextRun = await this.queue.getJob(schedulerJobId(scheduler.key, scheduler.next));
      return {
        ...schedule(scheduler),
        id: scheduler.key,
        name: scheduler.name,
        next: scheduler.next,
        iterationCount: scheduler.iterationCount,
        template: scheduler.template,
        ...(nextRun ? { nextRunJobId: nextRun.id } : {}),
      };
    }));
  }

  override get supportsJobSchedulerUpdate(): boolean {
    return true;
  }

  override get supportsJobSchedulerRun(): boolean {
    return true;
  }

  /** A new schedule, the stored template kept (an upsert without it would drop the job's name, data and options). */
  async updateJobScheduler(id: string, repeat: JobSchedulerRepeatOptions): Promise<JobSchedulerUpdateResult> {
    const current = await this.queue.getJobScheduler(id);
    if (!current) return 'not-found';
    try {
      const next = await this.queue.upsertJobScheduler(id, repeat, { name: current.name, ...current.template });
      return next ? 'updated' : 'invalid-schedule';
    } catch (error) {
      // A schedule is checked before anything is written: a refusal leaves the scheduler as it was.
      if (error instanceof EchoMQOptionError) return 'invalid-schedule';
      throw error;
    }
  }

  /** One job from the scheduler's template now, as a plain job; the schedule keeps its next slot. */
  async runJobSchedulerNow(id: string): Promise<QueueJob | 'not-found'> {
    const scheduler = await this.queue.getJobScheduler(id);
    if (!scheduler) return 'not-found';
    return this.wrap(await this.queue.add(scheduler.name, scheduler.template.data, scheduler.template.opts));
  }

  /** The scheduler whose next job this is: removing it alone would leave the scheduler without a next slot. */
  override async getArmedJobSchedulerId(job: QueueJob): Promise<string | null> {
    const id = job.toJSON().id;
    if (!job.repeatJobKey || typeof id !== 'string') return null;
    const scheduler = await this.queue.getJobScheduler(job.repeatJobKey).catch(() => undefined);
    return scheduler && schedulerJobId(scheduler.key, scheduler.next) === id ? scheduler.key : null;
  }

  private wrap(job: Job<any, any>): BoardJob {
    return new BoardJob(job, this.getQueueQualifiedName());
  }
}

/** The schedule fields the board shows, those the scheduler has. */
function schedule(scheduler: JobSchedulerJson): Partial<AppJobScheduler> {
  const { pattern, every, tz, limit, startDate, endDate } = scheduler;
  const fields: Partial<AppJobScheduler> = { pattern, every, tz, limit, startDate, endDate };
  for (const key of Object.keys(fields) as Array<keyof typeof fields>) if (fields[key] === undefined) delete fields[key];
  return fields;
}
