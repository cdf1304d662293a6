import type { Scripts } from '../../protocol/scripts.js';
import type { ParentNotices } from '../flows/parent-notices.js';
import type { JobContext } from '../job/job-context.js';
import type { WorkerLocks } from '../locks/worker-locks.js';
import type { ProcessorFunction } from '../queue/processor.js';
import type { SchedulerChain } from '../schedulers/scheduler-chain.js';
import type { AttemptSpans } from './attempt-spans.js';
import type { FinishBatcher } from './finish-batcher.js';
import type { Job } from '../job/job.js';
import type { RunSlots } from './run-slots.js';
import type { FinishedTrim } from './finished-trim.js';
import type { BackoffStrategy } from './worker-options.js';
import type { PickupFields } from './pickup-fields.js';

/** A job just taken into active, with the token that holds its lock. */
export interface ActiveJob {
  id: string;
  /** The job's hash: HGETALL's flat array (as the scripts return it) or its object form. */
  fields: PickupFields;
  token: string;
  /** When the pickup that set the lock was sent (the lock is at least this fresh). */
  acquiredAt?: number;
}

/** How a lane finishes the jobs of flows (a child, or a parent with flow keys): finishFlowJobs-15 (FinishBatcher.finishFlow), then the notice to the parent. */
export interface FlowFinishing {
  notices: Pick<ParentNotices, 'send' | 'sendStored'>;
}

/** What the runner reports to its worker. */
export interface RunnerEvents {
  active(job: Job): void;
  completed(job: Job, result: unknown): void;
  failed(job: Job, error: Error, willRetry: boolean): void;
  lockLost(job: Job, error: Error): void;
  error(error: Error): void;
}

/** What a JobRunner is built from: its lane builds it, once, from the worker's resolved options. */
export interface JobRunnerOptions {
  processor: ProcessorFunction;
  scripts: Scripts;
  context: JobContext;
  locks: WorkerLocks;
  lockDuration: number;
  finisher: Pick<FinishBatcher, 'finish' | 'finishFlow'>;
  events: RunnerEvents;
  /** The step before a job scheduler's job runs (it moves the scheduler on, or skips the job). */
  schedulers?: Pick<SchedulerChain, 'start'>;
  /** The worker's settings.backoffStrategy, for the jobs whose backoff type is a custom one. */
  backoffStrategy?: BackoffStrategy;
  /** The worker's jobTimeout: the timeout of jobs whose opts give none. */
  jobTimeout?: number;
  flows?: FlowFinishing;
  /** Where each finish's keep rule is noted, for the trim that keeps it holding on an idle queue. */
  trims?: Pick<FinishedTrim, 'note'>;
  /** With the worker's `telemetry`: a span per attempt. Without it, none is made. */
  spans?: AttemptSpans;
  /** With the worker's `prefetch`: a job held ahead waits here for a handler to end. Without it, none waits. */
  slots?: RunSlots;
}
