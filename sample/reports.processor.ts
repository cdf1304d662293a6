import { Logger } from '@nestjs/common';
import { InjectQueue, JobScheduler, OnWorkerEvent, Process, Processor, Queue, type Job, type JobCounts } from '../lib/index.js';

/** The sample's queue. */
export const REPORTS_QUEUE = 'reports';

/** The sample's job scheduler: a `digest` job every 10 s, the first at once (GET /schedulers). */
export const DIGEST_SCHEDULER = 'queue-digest';

/** What the `sum` job takes. */
export interface SumData {
  numbers: number[];
}

/** What the `render` job takes: how many pages, each ~500 ms of "work". */
export interface RenderData {
  pages: number;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * The sample's processor: three named handlers. `render` runs for pages × 500 ms, several times the
 * short lockDuration below, so its lock lives only because the LockManager's heartbeat renews it
 * (watch /locks/events). `digest` runs every 10 s, by a job scheduler declared on it. A job with
 * any other name fails, naming its name and this class.
 */
@Processor({ name: REPORTS_QUEUE, lockDuration: 2_000, concurrency: 4 })
export class ReportsProcessor {
  private readonly logger = new Logger(ReportsProcessor.name);

  constructor(@InjectQueue(REPORTS_QUEUE) private readonly queue: Queue) {}

  @Process('sum')
  sum(job: Job<SumData>): number {
    return job.data.numbers.reduce((total, n) => total + n, 0);
  }

  @Process('render')
  async render(job: Job<RenderData>, { signal }: { signal: AbortSignal }): Promise<{ pages: number; renderedAt: string }> {
    const pages = Math.min(Math.max(1, Math.floor(job.data.pages ?? 1)), 40);
    for (let page = 1; page <= pages; page++) {
      signal.throwIfAborted(); // cancelled, timed out, or the lock was lost: stop now
      await sleep(500);
      await job.updateProgress(Math.round((page / pages) * 100));
    }
    return { pages, renderedAt: new Date().toISOString() };
  }

  /** A report flow's parent (POST /reports): runs once every page is rendered, and reads their results. */
  @Process('assemble')
  async assemble(job: Job<{ pages: number }>): Promise<{ pages: number; words: number }> {
    const pages = Object.values(await job.getChildrenValues<{ page: number; words: number }>());
    return { pages: pages.length, words: pages.reduce((total, page) => total + page.words, 0) };
  }

  /** The queue's job counts, every 10 s. Restarting the app keeps the schedule as it is (an upsert of the same). */
  @Process('digest')
  @JobScheduler(DIGEST_SCHEDULER, { every: 10_000, immediately: true })
  digest(): Promise<Partial<JobCounts>> {
    return this.queue.getJobCounts('wait', 'active', 'delayed', 'completed', 'failed');
  }

  @OnWorkerEvent('completed')
  completed(job: Job): void {
    this.logger.log(`job ${job.id} (${job.name}) completed`);
  }

  @OnWorkerEvent('failed')
  failed(job: Job, error: Error): void {
    this.logger.warn(`job ${job.id} (${job.name}) failed: ${error.message}`);
  }
}
