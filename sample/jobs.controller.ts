import { BadRequestException, Body, Controller, Get, HttpCode, NotFoundException, Param, Post, Query } from '@nestjs/common';
import { InjectQueue, Queue, type Job, type JobStateName } from '../lib/index.js';
import { REPORTS_QUEUE } from './reports.processor.js';

/** What GET /jobs/:id answers, and GET /jobs lists. */
export interface JobView {
  id: string;
  name: string;
  state: string;
  progress: unknown;
  result?: unknown;
  failedReason?: string;
  attemptsStarted: number;
  /** The job scheduler that made the job, if one did. */
  repeatJobKey?: string;
}

/** The states GET /jobs lists when none is asked for. */
const LISTED_STATES: JobStateName[] = ['wait', 'active', 'delayed', 'completed', 'failed'];
/** GET /jobs shows at most this many jobs per state. */
const PER_STATE = 20;

/** Enqueue a job (POST /jobs/:name), list jobs by state (GET /jobs?state=delayed), read one (GET /jobs/:id), cancel one (POST /jobs/:id/cancel). */
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

  /** The first jobs of each state asked for (`?state=delayed,completed`), in the order they will run or finished. */
  @Get()
  async list(@Query('state') states?: string): Promise<JobView[]> {
    const wanted = states ? (states.split(',') as JobStateName[]) : LISTED_STATES;
    try {
      const perState = await Promise.all(wanted.map(async (state) => (await this.queue.getJobs(state, 0, PER_STATE - 1)).map((job) => viewOf(job, state))));
      return perState.flat();
    } catch (error) {
      throw new BadRequestException((error as Error).message); // an unknown state
    }
  }

  /**
   * Cancels a job wherever it is (POST /jobs/:id/cancel, body `{ "reason": "..." }`): one still to
   * run fails at once; a running one, on any worker of any instance, within a heartbeat tick.
   */
  @Post(':id/cancel')
  @HttpCode(200)
  async cancel(@Param('id') id: string, @Body() body?: { reason?: string }): Promise<{ id: string; cancelled: boolean }> {
    try {
      return { id, cancelled: await this.queue.cancelJob(id, body?.reason) };
    } catch (error) {
      throw new BadRequestException((error as Error).message); // a reason that is not a string
    }
  }

  @Get(':id')
  async show(@Param('id') id: string): Promise<JobView> {
    const found = await this.queue.getJob(id);
    if (!found) throw new NotFoundException(`no job ${id} in queue ${REPORTS_QUEUE}`);
    // The state first, then the job as it is now: a job that finished between two reads would
    // show as failed without its failedReason (or completed without its result).
    const state = await found.getState();
    return viewOf((await this.queue.getJob(id)) ?? found, state);
  }
}

function viewOf(job: Job, state: string): JobView {
  return {
    id: job.id,
    name: job.name,
    state,
    progress: job.progress,
    result: job.returnvalue,
    failedReason: job.failedReason,
    attemptsStarted: job.attemptsStarted,
    repeatJobKey: job.repeatJobKey,
  };
}
