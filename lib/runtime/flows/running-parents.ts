/**
 * The job runners of this process, so that a child added to a running job (queue.add with
 * `parent`, a step job's first step) makes that run a parent's: it then finishes as a flow job
 * (its flow keys kept or removed with it, a child's failParentOnFailure heard). A runner is looked
 * up only when such a child is added: a job that adds none costs nothing.
 */
export interface ParentRuns {
  /** Marks the run of the job `jobKey` (`P:{Q}:<id>`) a parent's, if this runner holds it. */
  markParent(jobKey: string): void;
}

const runners = new Set<ParentRuns>();

export function registerRunner(runner: ParentRuns): void {
  runners.add(runner);
}

export function unregisterRunner(runner: ParentRuns): void {
  runners.delete(runner);
}

/** A child was added to the job `jobKey`: the runner that runs it here, if any, is told. */
export function markRunningParent(jobKey: string): void {
  for (const runner of runners) runner.markParent(jobKey);
}
