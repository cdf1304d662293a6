import type { AdminScripts } from '../../protocol/admin-scripts.js';

/** How long one pass goes on while a set is still over its rule (a backlog drains over passes). */
const PASS_BUDGET_MS = 1000;

type FinishedState = 'completed' | 'failed';

/**
 * Keeps a lane's keep rules holding when its queue goes idle. Each finish trims its set by its own
 * job's rule (removeOnComplete / removeOnFail as a count or an age), at most 1000 jobs a call, so a
 * rule lowered on a set far over it holds only as jobs keep finishing. Here the last rule each set's
 * finishes used is kept (a Map write per such finish, no Redis command), and in the stalled sweep's
 * rhythm trimFinished-1 is called with it, again while jobs are over it, for at most PASS_BUDGET_MS
 * a pass; a rule that holds is forgotten until a finish uses one again.
 */
export class FinishedTrim {
  private readonly rules = new Map<FinishedState, [keepCount: number, keepAgeMs: number]>();

  constructor(private readonly scripts: Pick<AdminScripts, 'trimFinished'>) {}

  /**
   * A finish with this keep rule landed in `state`'s set. A count of 0 removed the job at its
   * finish and trims nothing (an age beside it applies to nothing): it is not a rule for the set.
   */
  note(state: FinishedState, keepCount: number, keepAgeMs: number): void {
    if (keepCount > 0 || (keepCount < 0 && keepAgeMs > 0)) this.rules.set(state, [keepCount, keepAgeMs]);
  }

  /** One pass: each rule noted since the last one, applied in bounded calls. */
  async sweep(): Promise<void> {
    const rules = [...this.rules];
    this.rules.clear();
    const until = Date.now() + PASS_BUDGET_MS;
    for (const [state, [keepCount, keepAgeMs]] of rules) {
      let over = 0;
      try {
        do {
          over = await this.scripts.trimFinished(state, keepCount, keepAgeMs, Date.now());
        } while (over > 0 && Date.now() < until);
      } catch (error) {
        // Kept for the next pass (an idle queue would never note it again), then reported by the sweep.
        if (!this.rules.has(state)) this.rules.set(state, [keepCount, keepAgeMs]);
        throw error;
      }
      // Still over when the pass ran out: the next pass goes on, unless a finish noted a newer rule.
      if (over > 0 && !this.rules.has(state)) this.rules.set(state, [keepCount, keepAgeMs]);
    }
  }
}
