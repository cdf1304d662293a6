import { EventEmitter } from 'node:events';
import type { Job } from '../job/job.js';
import type { JobState } from '../../protocol/keys.js';
import { JOB_STATES, parseJobStates, type JobStateName } from '../job/job-state.js';
import type { QueueListener } from './queue-listener.js';

/**
 * BullMQ's per-state shortcuts over a queue's two readers, getJobCounts and getJobs: the names
 * code moving over from BullMQ calls (`getWaitingCount()`, `getFailed(0, 9)`). "Waiting" here is
 * what workers may take next: `wait`, and `paused` while the queue is paused, as in BullMQ's
 * shortcuts (getJobCounts and getJobs themselves read only the states named). The base of the
 * Queue's classes: a Queue is an EventEmitter of its own process's events (QueueListener).
 */
export abstract class QueueGetters<Data, Result> extends EventEmitter<QueueListener<Data, Result>> {
  abstract getJobCounts(...states: JobStateName[]): Promise<Partial<Record<JobStateName, number>>>;
  abstract getJobs(states: JobStateName | JobStateName[], start?: number, end?: number, asc?: boolean): Promise<Array<Job<Data, Result>>>;

  /**
   * The jobs in all the states named (every state when none is), each state counted once; as in
   * BullMQ, `waiting` takes in `paused` too (`wait` alone does not). Unknown names are refused.
   */
  async getJobCountByTypes(...types: JobStateName[]): Promise<number> {
    const named = types.length > 0 ? parseJobStates(types, 'types') : [...JOB_STATES];
    const states = [...new Set<JobState>(types.includes('waiting') ? [...named, 'paused'] : named)];
    const counts = await this.getJobCounts(...states);
    return states.reduce((sum, state) => sum + (counts[state] ?? 0), 0);
  }

  /** Jobs waiting to be taken: in wait, or in paused while the queue is paused. */
  getWaitingCount(): Promise<number> {
    return this.getJobCountByTypes('waiting');
  }

  getActiveCount(): Promise<number> {
    return this.getJobCountByTypes('active');
  }

  getDelayedCount(): Promise<number> {
    return this.getJobCountByTypes('delayed');
  }

  getPrioritizedCount(): Promise<number> {
    return this.getJobCountByTypes('prioritized');
  }

  getCompletedCount(): Promise<number> {
    return this.getJobCountByTypes('completed');
  }

  getFailedCount(): Promise<number> {
    return this.getJobCountByTypes('failed');
  }

  /** Parents waiting for their children (docs/flows.md). */
  getWaitingChildrenCount(): Promise<number> {
    return this.getJobCountByTypes('waiting-children');
  }

  /** Jobs waiting to be taken (wait, and paused), `start` to `end` in getJobs' order. */
  getWaiting(start = 0, end = -1): Promise<Array<Job<Data, Result>>> {
    return this.getJobs(['wait', 'paused'], start, end);
  }

  getActive(start = 0, end = -1): Promise<Array<Job<Data, Result>>> {
    return this.getJobs('active', start, end);
  }

  getDelayed(start = 0, end = -1): Promise<Array<Job<Data, Result>>> {
    return this.getJobs('delayed', start, end);
  }

  getPrioritized(start = 0, end = -1): Promise<Array<Job<Data, Result>>> {
    return this.getJobs('prioritized', start, end);
  }

  /** Finished jobs, the newest first (getJobs' order for finished states). */
  getCompleted(start = 0, end = -1): Promise<Array<Job<Data, Result>>> {
    return this.getJobs('completed', start, end);
  }

  getFailed(start = 0, end = -1): Promise<Array<Job<Data, Result>>> {
    return this.getJobs('failed', start, end);
  }

  getWaitingChildren(start = 0, end = -1): Promise<Array<Job<Data, Result>>> {
    return this.getJobs('waiting-children', start, end);
  }
}
