import { Controller, Get } from '@nestjs/common';
import { InjectQueue, Queue } from '../lib/index.js';
import { REPORTS_QUEUE } from './reports.processor.js';

/** What GET /schedulers lists: a job scheduler of the queue and its next job. */
export interface SchedulerView {
  id: string;
  /** The name of the jobs it makes, so the handler that runs them. */
  jobName: string;
  every?: number;
  pattern?: string;
  tz?: string;
  /** When its next job is due. */
  next: string;
  /** That job, delayed until then: GET /jobs/:id. */
  nextJobId: string;
  /** How many jobs it has made. */
  made: number;
}

/** The queue's job schedulers, soonest first: GET /schedulers. */
@Controller('schedulers')
export class SchedulersController {
  constructor(@InjectQueue(REPORTS_QUEUE) private readonly queue: Queue) {}

  @Get()
  async list(): Promise<SchedulerView[]> {
    const schedulers = await this.queue.getJobSchedulers(0, -1, true);
    return schedulers.map((scheduler) => ({
      id: scheduler.key,
      jobName: scheduler.name,
      every: scheduler.every,
      pattern: scheduler.pattern,
      tz: scheduler.tz,
      next: new Date(scheduler.next).toISOString(),
      nextJobId: `repeat:${scheduler.key}:${scheduler.next}`, // a scheduler's job ids: repeat:<id>:<slot ms>
      made: scheduler.iterationCount,
    }));
  }
}
