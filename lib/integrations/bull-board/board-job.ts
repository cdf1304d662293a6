import type { JobRetryStatus, JobState as BoardJobState, QueueJob, QueueJobJson } from '@bull-board/api/typings/app';
import type { Job } from '../../runtime/job/job.js';

/**
 * A Job as bull-board handles it (its QueueJob): the board calls these methods itself (job detail,
 * retry, promote, remove, edit data, delay and priority) and reads toJSON(). A wrapper rather than
 * the Job, because the board reads toJSON's fields as BullMQ writes them.
 */
export class BoardJob implements QueueJob {
  constructor(
    readonly job: Job,
    /** `P:{Q}`: how jobs name their queue (a child's `parent.queueKey`); the board's flow view looks queues up by it. */
    readonly queueQualifiedName: string,
  ) {}

  get id(): string {
    return this.job.id;
  }

  get name(): string {
    return this.job.name;
  }

  get queueName(): string {
    return this.job.queueName;
  }

  get repeatJobKey(): string | undefined {
    return this.job.repeatJobKey;
  }

  get opts(): QueueJob['opts'] {
    return this.job.opts as QueueJob['opts'];
  }

  /** job.getState() answers BullMQ's names, which are the board's. */
  getState(): Promise<BoardJobState> {
    return this.job.getState();
  }

  promote(): Promise<void> {
    return this.job.promote();
  }

  remove(): Promise<void> {
    return this.job.remove();
  }

  retry(state: JobRetryStatus = 'failed'): Promise<void> {
    return this.job.retry(state);
  }

  updateData(data: Record<string, any>): Promise<void> {
    return this.job.updateData(data);
  }

  changeDelay(delay: number): Promise<void> {
    return this.job.changeDelay(delay);
  }

  changePriority(opts: { priority?: number; lifo?: boolean }): Promise<void> {
    return this.job.changePriority(opts);
  }

  async getDependenciesCount(): Promise<{ processed: number; unprocessed: number; ignored: number; failed: number }> {
    return this.job.getDependenciesCount();
  }

  toJSON(): QueueJobJson {
    const job = this.job;
    return {
      id: job.id,
      name: job.name,
      data: job.data,
      opts: job.opts,
      progress: job.progress as QueueJobJson['progress'],
      attemptsMade: job.attemptsMade,
      attemptsStarted: job.attemptsStarted,
      stalledCounter: job.stalledCounter,
      timestamp: job.timestamp,
      processedOn: job.processedOn ?? null,
      finishedOn: job.finishedOn ?? null,
      delay: job.delay,
      priority: job.priority,
      failedReason: job.failedReason ?? '',
      stacktrace: job.stacktrace,
      returnvalue: job.returnvalue,
      ...(job.parentKey === undefined ? {} : { parentKey: job.parentKey }),
      ...(job.repeatJobKey === undefined ? {} : { repeatJobKey: job.repeatJobKey }),
      ...(job.deduplicationId === undefined ? {} : { deduplicationId: job.deduplicationId }),
    };
  }
}
