import { Logger } from '@nestjs/common';
import { OnWorkerEvent, Process, Processor, type Job } from '../lib/index.js';

/** The sample's queue. */
export const REPORTS_QUEUE = 'reports';

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
 * The sample's processor: two named handlers. `render` runs for pages × 500 ms, several times the
 * short lockDuration below, so its lock lives only because the LockManager's heartbeat renews it
 * (watch /locks/events). A job with any other name fails, naming its name and this class.
 */
@Processor({ name: REPORTS_QUEUE, lockDuration: 2_000, concurrency: 4 })
export class ReportsProcessor {
  private readonly logger = new Logger(ReportsProcessor.name);

  @Process('sum')
  sum(job: Job<SumData>): number {
    return job.data.numbers.reduce((total, n) => total + n, 0);
  }

  @Process('render')
  async render(job: Job<RenderData>, { signal }: { signal: AbortSignal }): Promise<{ pages: number; renderedAt: string }> {
    const pages = Math.min(Math.max(1, Math.floor(job.data.pages ?? 1)), 40);
    for (let page = 1; page <= pages; page++) {
      signal.throwIfAborted(); // the lock was lost: stop, another worker owns the job now
      await sleep(500);
      await job.updateProgress(Math.round((page / pages) * 100));
    }
    return { pages, renderedAt: new Date().toISOString() };
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
