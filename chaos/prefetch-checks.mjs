// The checks of the prefetch scenario (on top of the common ones, checks.mjs): workers at
// concurrency 1 holding two jobs ahead are killed -9 and closed under load.
import { releaseFigures, releaseProblems, releasesAfterFaults, violations } from './checks.mjs';
import { openAttempts } from './ledger.mjs';

/**
 * Held jobs given back by a close (`left` records with reason 'requeued'), and how long the jobs a
 * killed worker held, running or held ahead (`pickup` records), took to leave active.
 *
 * Why the kill is bounded at the sweep and not at the rerun: a worker holds jobs ahead only while
 * more wait, so this scenario keeps a backlog by design (3 handlers for 20 jobs/s of 50-250 ms
 * work, fewer while a worker is replaced), and a sweep puts a job at the back of wait (LPUSH; the
 * pickup takes the oldest). Kept runs showed 17-20 jobs in wait at the sweeps whose reruns came
 * 3.4-3.7 s after the kill, swept at 1.97-2.02 s. That wait is the load's, as in the moves'
 * scenario, so fault→rerun is reported and not bounded here.
 */
export function checkPrefetch({ records, events, faults, timing }) {
  const givenBack = records.filter((r) => r.type === 'left' && r.reason === 'requeued');
  const started = new Set(records.filter((r) => r.type === 'start').map((r) => `${r.id}#${r.ats}`));
  const kills = faults.filter((f) => f.kind === 'kill -9');
  const held = (victim, at) => openAttempts(victim, at, 'pickup');
  const releases = releasesAfterFaults({ faults: kills, records, events, held });
  return {
    givenBack: givenBack.length,
    // A held job given back must never have started (its handler run, then the job handed on).
    givenBackAfterStart: givenBack.filter((r) => started.has(`${r.id}#${r.ats}`)).length,
    ...releaseFigures(releases, timing),
  };
}

/** The verdict of the row: the common checks but the rerun bound, then the prefetch ones. */
export function prefetchViolations(row) {
  const problems = [...violations(row, { boundRecovery: false }), ...releaseProblems(row, 'a job held at a kill')];
  if (!row.heldAtKills) problems.push('no kill found a job held: the kills did not exercise the sweep');
  if (!row.givenBack) problems.push('no close gave a held job back: the closes did not exercise the give-back');
  if (row.givenBackAfterStart) problems.push(`${row.givenBackAfterStart} held jobs given back after they had started`);
  return problems;
}

/** The figures of the row that the table has no column for. */
export function formatPrefetch(row) {
  return `  jobs held at a kill (running or ahead): ${row.heldAtKills}, out of active within ${row.maxReleaseMs ?? '-'} ms (bound ${row.releaseBoundMs}), ` +
    `their reruns started within ${row.maxRecoveryMs ?? '-'} ms; held jobs given back by a close: ${row.givenBack} (after they had started: ${row.givenBackAfterStart})`;
}
