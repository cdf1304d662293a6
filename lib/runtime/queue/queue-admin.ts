import { EchoMQError, EchoMQOptionError } from '../../protocol/errors.js';
import { readMetrics, readMetricsTotals, type Metrics, type MetricsType } from '../../protocol/metrics.js';
import { assertDeduplicationId, describe } from '../../protocol/names.js';
import type { WorkerInfo } from '../../protocol/queue-limits.js';
import type { RedisClient } from '../../protocol/script.js';
import type { RateLimit } from '../../protocol/script-shapes.js';
import type { Job } from '../job/job.js';
import { parseJobState, type JobStateName } from '../job/job-state.js';
import type { QueuePart } from '../job/queue-part.js';
import type { JobSchedulerJson, JobSchedulers } from '../schedulers/job-schedulers.js';
import type { RepeatOptions } from '../schedulers/repeat-options.js';
import type { JobSchedulerTemplate } from '../schedulers/template.js';
import { deleteLeftoverKeys } from './leftover-keys.js';
import { removeOrphanedJobs } from './orphaned-jobs.js';
import { assertIndex } from './job-reads.js';
import type { PartitionRouter } from './partition-router.js';
import { assertPrometheusLabels, queueMetricsText, PROMETHEUS_STATES } from './prometheus-text.js';
import { QueueGetters } from './queue-getters.js';
import type { PromoteJobsOptions, QueueJobControl, RetryJobsOptions } from './queue-job-control.js';
import type { JobLogs, QueueJobRecords } from './queue-job-records.js';
import type { QueueLimits, QueueMeta } from './queue-limits.js';
import { listWorkers } from './queue-workers.js';
import type { JobStatus } from '../job/job-state.js';

/**
 * A Queue's management, beside its adds and reads (queue.ts): cancels and job control over many
 * jobs, job schedulers, queue-wide limits, workers and metrics, deduplication ids, pause, drain,
 * clean and obliterate. Most of it hands over to the delegates the Queue builds (QueueJobControl,
 * JobSchedulers, QueueLimits); the Queue gives them through the abstract members below.
 */
export abstract class QueueAdmin<Data, Result> extends QueueGetters<Data, Result> {
  abstract readonly name: string;
  abstract readonly client: RedisClient;
  protected abstract readonly parts: QueuePart[];
  protected abstract readonly router: PartitionRouter;
  protected abstract readonly schedulers: JobSchedulers<Data, Result>;
  protected abstract readonly limits: QueueLimits;
  protected abstract readonly control: QueueJobControl;
  protected abstract readonly records: QueueJobRecords;

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

  /** Stores a job's progress (any JSON value) and writes its `progress` event (BullMQ's name); EchoMQError -1 when there is no such job. */
  async updateJobProgress(jobId: string, progress: unknown): Promise<void> {
    await this.records.updateJobProgress(jobId, progress);
    this.emit('progress', jobId, progress);
  }

  /** Appends a line to a job's log, keeping the newest `keepLogs` (0: all); answers how many it holds (BullMQ's name). */
  addJobLog(jobId: string, logRow: string, keepLogs?: number): Promise<number> {
    return this.records.addJobLog(jobId, logRow, keepLogs);
  }

  /** Where a job is, under BullMQ's names (as job.getState()): 'unknown' when no state holds it. */
  getJobState(jobId: string): Promise<JobStatus> {
    return this.records.getJobState(jobId);
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
    return this.records.getJobLogs(jobId, start, end, asc);
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

  /** The queue-wide concurrency, or null when none is set (BullMQ's answer). */
  getGlobalConcurrency(): Promise<number | null> {
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

  /** The queue-wide rate limit, or null when none is set (BullMQ's answer). */
  getGlobalRateLimit(): Promise<RateLimit | null> {
    return this.limits.getGlobalRateLimit();
  }

  /** Lifts the queue-wide rate limit (the workers' `limiter` applies again); workers learn it within one lockRenewTime. */
  removeGlobalRateLimit(): Promise<void> {
    return this.limits.removeGlobalRateLimit();
  }

  /**
   * A manual rate limit from outside a worker (BullMQ's queue.rateLimit; as worker.rateLimit): no
   * worker of the queue takes a job for `expireTimeMs` (docs/limits.md).
   */
  rateLimit(expireTimeMs: number): Promise<void> {
    return this.limits.rateLimit(expireTimeMs);
  }

  /**
   * How long the queue stays rate limited, in ms (BullMQ's getRateLimitTtl): with `maxJobs`, 0
   * unless its window has taken that many jobs; without, the global rate limit's max decides the
   * same way, and with none set it is the limiter's PTTL as Redis answers it (-2: none). The
   * longest over the partitions of a partitioned queue.
   */
  getRateLimitTtl(maxJobs?: number): Promise<number> {
    return this.limits.getRateLimitTtl(maxJobs);
  }

  /** The queue's settings as its meta hash holds them (BullMQ's getMeta): paused, and the queue-wide limits set. */
  getMeta(): Promise<QueueMeta> {
    return this.limits.getMeta();
  }

  /**
   * Deletes job hashes that no state holds (BullMQ's name): left by a crash of another runtime
   * between two writes, or by hand. SCAN pages of `count` keys, judged `count` at a time by
   * removeOrphanedJobs-8; stops after `limit` removed (0: none). Answers how many were.
   */
  removeOrphanedJobs(count = 1000, limit = 0): Promise<number> {
    return removeOrphanedJobs(this.client, this.parts, count, limit);
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
    await Promise.all(this.parts.map((part) => part.admin.pause('pause')));
    this.emit('paused');
  }

  /** Lets workers take jobs again, from every partition. */
  async resume(): Promise<void> {
    await Promise.all(this.parts.map(async (part) => {
      await part.admin.pause('resume');
      part.wake();
    }));
    this.emit('resumed');
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
    for (const part of this.parts) while ((await part.admin.drain(delayed)) > 0);
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
        if (limit > 0 && removed.length >= limit) return this.cleaned(removed, state);
        const swept = await part.admin.cleanJobsInSet(state, cutoff, limit === 0 ? 0 : limit - removed.length, rank);
        removed.push(...swept.removed);
        rank = swept.nextRank;
      } while (rank >= 0);
    }
    return this.cleaned(removed, state);
  }

  private cleaned(removed: string[], state: string): string[] {
    this.emit('cleaned', removed, state);
    return removed;
  }

  /**
   * Deletes the queue and all its jobs. Refuses while jobs are active, unless `force`. One
   * obliterate-2 call deletes at most 1,000 jobs; it loops until the queue is gone. A partitioned
   * queue checks every partition for active jobs before it deletes anything. What no script can
   * list (deduplication keys, the flow keys of a parent another job's keep rule removed) goes last,
   * found by SCAN (leftover-keys.ts): afterwards no key of the queue is left.
   */
  async obliterate(opts: { force?: boolean } = {}): Promise<void> {
    const force = opts.force === true;
    if (!force && this.parts.length > 1) {
      const active = await this.getJobCounts('active');
      if ((active.active ?? 0) > 0) throw activeRefusal();
    }
    for (const part of this.parts) {
      for (;;) {
        const reply = await part.admin.obliterate(force);
        if (reply === 1) break;
        if (reply === -3) throw activeRefusal();
      }
    }
    await deleteLeftoverKeys(this.client, this.parts.map((part) => part.keys));
  }
}

function activeRefusal(): EchoMQError {
  return new EchoMQError(-3, '*', 'obliterate-2.lua', 'the queue has active jobs; pass { force: true } to delete them too');
}
