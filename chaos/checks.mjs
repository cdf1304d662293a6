// The checks run after a scenario drained: what Redis holds against what the ledgers say happened.
import { openAttempts } from './ledger.mjs';

const RECOVERY_FAULTS = new Set(['kill -9', 'SIGSTOP', 'blocking handler']);

/**
 * Computes one scenario's row. `jobs` maps each added id to its final hash (or undefined),
 * `finished` maps ids to 'completed' | 'failed', `left` counts wait/paused/prioritized/active/delayed;
 * `movedRuns` names runs whose handler's move out of active landed (move-checks.mjs); `cancelled`
 * the ids queue.cancelJob answered true for (cancel-checks.mjs).
 */
export function checkScenario({ ids, jobs, finished, left, records, faults, crashes, timing, events = [], movedRuns = [], cancelled = new Set() }) {
  const starts = records.filter((r) => r.type === 'start');
  const planned = new Set(ids);
  // A blocking handler is a fault of its own worker, from the moment it blocked.
  const allFaults = [...faults, ...records.filter((r) => r.type === 'block').map((r) => ({ kind: 'blocking handler', worker: r.w, at: r.t }))];

  const lost = ids.filter((id) => !jobs.get(id) || !finished.has(id));
  // A job queue.cancelJob cancelled is meant to fail (cancel-checks.mjs says how): not counted here.
  const failed = ids.filter((id) => finished.get(id) === 'failed' && !cancelled.has(id));

  // Fencing: the result stored must come from the job's last pickup, and only that one may be accepted.
  const stale = new Set();
  const acceptedCount = new Map();
  for (const id of ids) {
    const hash = jobs.get(id);
    if (!hash || finished.get(id) !== 'completed') continue;
    const result = JSON.parse(hash.returnvalue ?? 'null');
    if (!result || result.ats !== Number(hash.ats)) stale.add(id);
  }
  for (const r of records.filter((r) => r.type === 'accepted')) {
    acceptedCount.set(r.id, (acceptedCount.get(r.id) ?? 0) + 1);
    if (r.ats !== Number(jobs.get(r.id)?.ats)) stale.add(r.id);
  }
  for (const [id, count] of acceptedCount) if (count > 1) stale.add(id);

  // Duplicates: every pickup after a job's first (ats counts them, recorded in the ledger or not),
  // but for the pickup after a run whose job left on purpose, its move landed (moved to delayed,
  // given back for a rate limit): that one is the protocol's next step, planned. Such a run is known
  // by its worker's `left` record, or (`movedRuns`, `${id}#${ats}`) by Redis's event of the move,
  // whose reply the killed worker did not live to read.
  const leftOnPurpose = new Set([...records.filter((r) => r.type === 'left').map((r) => `${r.id}#${r.ats}`), ...movedRuns]);
  let duplicates = 0;
  let plannedPickups = 0;
  const untraced = [];
  for (const id of ids) {
    const finalAts = Number(jobs.get(id)?.ats ?? 0);
    const mine = starts.filter((r) => r.id === id);
    for (let ats = 1; ats < finalAts; ats++) {
      if (leftOnPurpose.has(`${id}#${ats}`)) {
        plannedPickups++;
        continue;
      }
      duplicates++;
      const start = mine.find((r) => r.ats === ats);
      // The pickup happened after the previous attempt started; its start record may be much later
      // (a worker frozen between pickup and handler writes it after SIGCONT).
      const from = mine.filter((r) => r.ats < ats).at(-1)?.t ?? 0;
      const to = mine.find((r) => r.ats > ats)?.t ?? Infinity;
      const traced = allFaults.some((f) => f.at >= from && f.at <= to && (f.global || !start || f.worker === start.w));
      if (!traced) untraced.push(`${id}#${ats}`);
    }
  }

  // Recovery: from a fault to the moment another pickup of each job the victim held starts running
  // (reported), and to the moment Redis's events show the job out of active (bounded: the rerun
  // after it waits its turn among the jobs in wait, which the protocol does not bound).
  const recoveries = [];
  const recoveryFaults = allFaults.filter((f) => RECOVERY_FAULTS.has(f.kind));
  const releases = releasesAfterFaults({ faults: recoveryFaults, records, events, held: openAttempts });
  for (const fault of recoveryFaults) {
    const held = openAttempts(records.filter((r) => r.w === fault.worker), fault.at);
    for (const attempt of held) {
      const next = starts.find((r) => r.id === attempt.id && r.ats > attempt.ats);
      if (next) recoveries.push(next.t - fault.at);
    }
  }

  const refused = records.filter((r) => r.type === 'refused');
  return {
    jobs: ids.length,
    completed: ids.filter((id) => finished.get(id) === 'completed').length,
    lost: lost.length,
    failed: failed.length,
    left,
    staleAccepted: stale.size,
    duplicates,
    plannedPickups,
    untraced: untraced.length,
    untracedIds: untraced,
    refused: refused.length,
    refusedCodes: [...new Set(refused.map((r) => r.code))].sort(),
    fencedSinkRefusals: records.filter((r) => r.type === 'end' && r.sinkAccepted === false).length,
    unexpected: starts.filter((r) => !planned.has(r.id)).length,
    crashes: crashes.length + records.filter((r) => r.type === 'crash').length,
    workerErrors: records.filter((r) => r.type === 'error').length,
    faults: allFaults.length,
    recoverySamples: recoveries.length,
    maxRecoveryMs: recoveries.length ? Math.max(...recoveries) : null,
    ...releaseFigures(releases, timing),
  };
}

/**
 * Added to lockDuration + stalledInterval, the sweep's bound on a held job's release. Each worker
 * times its next sweep to the stalled-check guard's expiry, read after its own sweep, so sweeps
 * come a stalledInterval plus a timer's lag and a round trip apart: a few ms on a quiet machine,
 * tens on a loaded one. (Without it, kept runs came within 79 to 111 ms of the bare bound.) Far
 * less than a stalledInterval, so a job that waited for one more sweep still fails the check.
 */
const SWEEP_LAG_ALLOWANCE_MS = 100;

/** How long after a kill a job its worker held may stay in active: the sweep's bound. */
/**
 * A move out of active that a run ledgered it was about to make (`intent`: its id, fencing number
 * `ats` and time `t`), as Redis's event stream has it: the first event the predicate `isLanding`
 * accepts after the record and before the job's next run started, or undefined. (Redis's event
 * times and the ledgers' are ms of one clock.)
 */
export function landingOf(intent, events, starts, isLanding) {
  const nextRun = starts.find((r) => r.id === intent.id && r.ats > intent.ats)?.t ?? Infinity;
  return events.find((e) => e.jobId === intent.id && isLanding(e) && e.at >= intent.t && e.at <= nextRun);
}

/**
 * The runs (`${id}#${ats}`) whose ledgered move landed, whether or not their worker lived to hear
 * it. `landingFor(record)` is the predicate of the events that land a record's move, or undefined
 * for a record that announces none.
 */
export function landedRuns(records, events, landingFor) {
  const starts = records.filter((r) => r.type === 'start');
  return records.filter((r) => landingFor(r) && landingOf(r, events, starts, landingFor(r))).map((r) => `${r.id}#${r.ats}`);
}

export function releaseBoundMs(timing) {
  return timing.lockDuration + timing.stalledInterval + SWEEP_LAG_ALLOWANCE_MS;
}

/** An event that takes a job out of active for good: swept back, completed or failed. */
export const sweptOrFinished = (e) => ['stalled', 'completed', 'failed'].includes(e.event);

/** Out of active: swept or finished, or back in wait from active (a give-back landing). */
const leftActive = (e) => sweptOrFinished(e) || (e.event === 'waiting' && e.prev === 'active');

/**
 * For each job a faulted worker held at its fault (`held(recordsOfVictim, at)` names them), the ms
 * from the fault until Redis's event stream shows the job out of active (`leavesActive`): swept
 * back (`stalled`), or finished or moved by a write in flight at the fault (0 when it landed
 * first); Infinity when it never left. The protocol bounds this by lockDuration + stalledInterval
 * (releaseBoundMs); the rerun after it may wait longer, behind the jobs already in wait. (Redis's
 * event times and the ledgers' are ms of one clock.)
 */
export function releasesAfterFaults({ faults, records, events, held, leavesActive = leftActive }) {
  const releases = [];
  for (const fault of faults) {
    for (const attempt of held(records.filter((r) => r.w === fault.worker), fault.at)) {
      const release = events.find((e) => e.jobId === attempt.id && e.at >= attempt.t && leavesActive(e));
      releases.push(release ? Math.max(0, release.at - fault.at) : Infinity);
    }
  }
  return releases;
}

/** A row's release figures: how many held jobs a kill found, the longest release, and its bound. */
export function releaseFigures(releases, timing) {
  return { heldAtKills: releases.length, maxReleaseMs: releases.length ? Math.max(...releases) : null, releaseBoundMs: releaseBoundMs(timing) };
}

/** The release check of a row with releaseFigures: `what` names the jobs it bounds. */
export function releaseProblems(row, what) {
  if (row.maxReleaseMs === null || row.maxReleaseMs < row.releaseBoundMs) return [];
  return [`${what} left active ${row.maxReleaseMs} ms after it, not under ${row.releaseBoundMs} ms`];
}

/** The verdict of one row: the list of checks that failed (empty when the scenario passed). */
export function violations(row, { expectRefusals = false, boundRecovery = true } = {}) {
  const problems = [];
  if (row.lost) problems.push(`${row.lost} jobs lost`);
  if (row.failed) problems.push(`${row.failed} jobs failed`);
  if (row.left) problems.push(`${row.left} jobs left in wait/active/delayed`);
  if (row.staleAccepted) problems.push(`${row.staleAccepted} completions accepted from a stale owner`);
  if (row.untraced) problems.push(`${row.untraced} duplicate executions not traced to a fault: ${row.untracedIds.join(', ')}`);
  if (row.unexpected) problems.push(`${row.unexpected} executions of jobs never added`);
  if (row.crashes) problems.push(`${row.crashes} worker crashes`);
  if (row.faults === 0) problems.push('no fault was injected');
  if (boundRecovery) problems.push(...releaseProblems(row, 'a job held at a fault'));
  if (expectRefusals && row.refused === 0) problems.push('no late result was refused: the fault did not hit a held job');
  return problems;
}
