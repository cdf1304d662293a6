import { BadRequestException, Body, Controller, Get, HttpCode, NotFoundException, Param, Post } from '@nestjs/common';
import { InjectQueue, Queue } from '../lib/index.js';
import { REPORTS_QUEUE } from './reports.processor.js';

/** What GET /jobs/:id answers. */
export interface JobView {
  id: string;
  name: string;
  state: string;
  progress: unknown;
  result?: unknown;
  failedReason?: string;
  attemptsStarted: number;
}

/** Enqueue a job (POST /jobs/:name) and read its state and result (GET /jobs/:id). */
@Controller('jobs')
export class JobsController {
  constructor(@InjectQueue(REPORTS_QUEUE) private readonly queue: Queue) {}

  @Post(':name')
  @HttpCode(202)
  async enqueue(@Param('name') name: string, @Body() data: unknown): Promise<{ id: string; name: string }> {
    try {
      const job = await this.queue.add(name, data ?? {});
      return { id: job.id, name: job.name };
    } catch (error) {
      throw new BadRequestException((error as Error).message);
    }
  }

  @Get(':id')
  async show(@Param('id') id: string): Promise<JobView> {
    const found = await this.queue.getJob(id);
    if (!found) throw new NotFoundException(`no job ${id} in queue ${REPORTS_QUEUE}`);
    // The state first, then the job as it is now: a job that finished between two reads would
    // show as failed without its failedReason (or completed without its result).
    const state = await found.getState();
    const job = (await this.queue.getJob(id)) ?? found;
    return {
      id: job.id,
      name: job.name,
      state,
      progress: job.progress,
      result: job.returnvalue,
      failedReason: job.failedReason,
      attemptsStarted: job.attemptsStarted,
    };
  }
}
