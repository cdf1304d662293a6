// The checks of the scenario whose jobs fail their first attempt (on top of the common ones,
// checks.mjs): a worker's retries go with its finishes in one finishJobs-13 call (target
// "retried"), back to wait or, with a backoff, to delayed, while worker processes are killed -9
// right around them and their connections are cut. What Redis holds at the end and its event
// stream against the ledgers.
import { landedRuns, releaseFigures, releaseProblems, releasesAfterFaults, sweptOrFinished, violations } from './checks.mjs';
import { openAttempts } from './ledger.mjs';

/** A retry landing in Redis's stream: back to wait (prev failed), or to delayed with its failedReason. */
const isRetry = (e) => (e.event === 'waiting' && e.prev === 'failed') || (e.event === 'delayed' && e.failedReason !== undefined);

/** The runs (`${id}#${ats}`) whose retry (a `retrying` record) landed, whether or not their worker lived to hear it. */
export const retriedRuns = (records, events) => landedRuns(records, events, (r) => (r.type === 'retrying' ? isRetry : undefined));

/**
 * `kinds` maps each job id to its plan ('retry', 'retry-backoff' or 'plain'); `jobs` each id to its
 * final hash; `events` is the stream; `faults` the kills, those aimed at a retry naming it
 * ({ around: 'retrying', id, ats }). `backoffMs`: the fixed backoff of 'retry-backoff' jobs.
 */
export function checkRetries({ ids, kinds, jobs, records, events, faults, timing, backoffMs }) {
  const starts = records.filter((r) => r.type === 'start');
  const retrying = ids.filter((id) => kinds.get(id) !== 'plain');
  // Each retry job fails once (its first attempt that reaches the handler's throw) and completes on
  // a later run: its attempt counted exactly once, by the one retry that landed, however often its
  // send was repeated after a cut connection.
  const countedAttempts = retrying.filter((id) => jobs.get(id)?.atm !== '2').map((id) => `${id} (atm ${jobs.get(id)?.atm})`);
  const retriedTwice = retrying.filter((id) => events.filter((e) => e.jobId === id && isRetry(e)).length !== 1);
  const strayRetries = ids.filter((id) => kinds.get(id) === 'plain' && events.some((e) => e.jobId === id && isRetry(e)));
  // A retry with a backoff goes to delayed, due backoffMs after its handler threw (the send's own
  // time: a send repeated after a cut connection keeps it), and runs no earlier.
  const earlyRuns = [];
  for (const id of ids.filter((i) => kinds.get(i) === 'retry-backoff')) {
    const landing = events.find((e) => e.jobId === id && isRetry(e));
    if (!landing) continue;
    const threw = records.filter((r) => r.type === 'retrying' && r.id === id && r.t <= landing.at).at(-1);
    if (landing.event !== 'delayed' || !threw || Number(landing.delay) < threw.t + backoffMs) earlyRuns.push(`${id} (${JSON.stringify(landing)}, threw at ${threw?.t})`);
    const early = starts.find((r) => r.id === id && r.t > landing.at && r.t < Number(landing.delay));
    if (early) earlyRuns.push(`${id} ran at ${early.t}, due at ${landing.delay}`);
  }
  const aimed = faults.filter((f) => f.around === 'retrying');
  const landed = new Set(retriedRuns(records, events));
  // A job held at a kill leaves active within the sweep's bound (or by the retry in flight).
  const releases = releasesAfterFaults({ faults, records, events, held: openAttempts, leavesActive: (e) => sweptOrFinished(e) || isRetry(e) });
  return {
    countedAttempts,
    retriedTwice,
    strayRetries,
    earlyRuns,
    retriesLanded: events.filter(isRetry).length,
    retriesDelayed: events.filter((e) => isRetry(e) && e.event === 'delayed').length,
    killsAroundRetries: { aimed: aimed.length, afterLanding: aimed.filter((f) => landed.has(`${f.id}#${f.ats}`)).length },
    ...releaseFigures(releases, timing),
  };
}

/** The verdict of the retries row (the list of checks that failed). */
export function retryViolations(row) {
  const problems = [...violations(row, { boundRecovery: false }), ...releaseProblems(row, 'a job held at a kill')];
  if (row.countedAttempts.length) problems.push(`retried jobs whose attemptsMade is not 2: ${row.countedAttempts.join(', ')}`);
  if (row.retriedTwice.length) problems.push(`retried jobs without exactly one retry landing: ${row.retriedTwice.join(', ')}`);
  if (row.strayRetries.length) problems.push(`jobs retried that were not planned to fail: ${row.strayRetries.join(', ')}`);
  if (row.earlyRuns.length) problems.push(`retries with a backoff run early: ${row.earlyRuns.join('; ')}`);
  if (!row.retriesLanded || !row.retriesDelayed) problems.push(`${row.retriesLanded} retries landed, ${row.retriesDelayed} of them delayed: the scenario did not exercise both`);
  if (!row.killsAroundRetries.aimed) problems.push('no kill landed around a retry');
  return problems;
}

/** The row's own figures, printed under its line. */
export function formatRetries(row) {
  return `  retries landed ${row.retriesLanded} (${row.retriesDelayed} delayed), kills aimed at a retry ${row.killsAroundRetries.aimed} ` +
    `(${row.killsAroundRetries.afterLanding} after it landed), held at kills ${row.heldAtKills}, longest release ${row.maxReleaseMs} ms (bound ${row.releaseBoundMs})`;
}
