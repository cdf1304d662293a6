import type { Job } from '../job/job.js';

/**
 * The events a Queue emits in its own process (BullMQ's QueueListener): what this Queue object
 * did, as it did it. Other processes' jobs and workers are QueueEvents' (a stream every process
 * reads). A Queue never emits `error` of its own: a call that fails rejects its promise.
 */
export interface QueueListener<Data = unknown, Result = unknown> {
  /** add() added (or found, by its id or deduplication id) this job. */
  waiting: [job: Job<Data, Result>];
  /** pause() paused the queue. */
  paused: [];
  /** resume() resumed it. */
  resumed: [];
  /** remove(jobId) removed the job. */
  removed: [jobId: string];
  /** updateJobProgress(jobId, progress) stored it. */
  progress: [jobId: string, progress: unknown];
  /** clean() removed these jobs of this state. */
  cleaned: [jobs: string[], type: string];
  error: [error: Error];
}
