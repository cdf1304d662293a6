import type { ParentPolicy } from '../../protocol/flow-scripts.js';
import type { RunOwnership } from '../job/job-context.js';
import type { JobLock } from '../locks/tracked-job.js';

/**
 * What a JobRunner knows of its runs beyond their locks: whose handler moved its job away, which
 * are runs of jobs of flows (with their policy on failure) and which of those are parents'.
 * Keyed by the run's lock and holding no Job: measured (bench/README.md, "Data of 3.5 KB,
 * found"), V8 keeps what a long-lived Map or WeakMap once held, deleted or not, reachable until
 * the next full GC, and a Job holds its data: every job's data was promoted with it.
 */
export class RunMarks {
  /** Runs whose handler moved its job to delayed or waiting-children (ownRun): the runner neither completes nor fails them. */
  private readonly movedAway = new WeakMap<JobLock, 'delayed' | 'waiting-children'>();
  /** Runs of jobs of flows, with their policy on failure (pfp): they finish by finishFlowJobs-15 and leave a notice (FlowFinishing), the others as before. */
  private readonly flowJobs = new WeakMap<JobLock, ParentPolicy>();
  /** Of those, the runs of parents (fch, or children added while they ran): a child's failParentOnFailure may have marked them (cfr). */
  private readonly parents = new WeakSet<JobLock>();

  /** A run of a job of a flow, as its pickup's fields say (a parent's when `parent`). */
  flowJob(lock: JobLock, policy: ParentPolicy, parent: boolean): void {
    this.flowJobs.set(lock, policy);
    if (parent) this.parents.add(lock);
  }

  /** A run whose job got children: it now finishes as a flow job's (its policy kept if it had one) and as a parent's. */
  becomeParent(lock: JobLock): void {
    if (!this.flowJobs.has(lock)) this.flowJobs.set(lock, '');
    this.parents.add(lock);
  }

  isParent(lock: JobLock): boolean {
    return this.parents.has(lock);
  }

  isFlowJob(lock: JobLock): boolean {
    return this.flowJobs.has(lock);
  }

  /** The run's policy on failure, '' when it has none. */
  policyOf(lock: JobLock): ParentPolicy {
    return this.flowJobs.get(lock) ?? '';
  }

  /** Where the run's handler moved its job, if it did. */
  movedTo(lock: JobLock): 'delayed' | 'waiting-children' | undefined {
    return this.movedAway.get(lock);
  }

  /**
   * The run held under `lock`, for the handler's own job.moveToDelayed and job.moveToWaitingChildren
   * (JobContext.ownRun): the lock stops being renewed as the move is sent (a renewal that finds it
   * gone is the move's to judge) and is let go when the move lands. Built only when a handler
   * moves its job, so a run that does not costs nothing.
   */
  ownership(lock: JobLock, token: string): RunOwnership {
    return {
      token,
      leaving: () => lock.beginRelease(),
      left: (to = 'delayed') => {
        this.movedAway.set(lock, to);
        lock.release(to);
      },
      stayed: () => lock.cancelRelease(),
      becameParent: () => this.becomeParent(lock),
    };
  }
}
