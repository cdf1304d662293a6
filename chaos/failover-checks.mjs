// The checks of a failover scenario: what the new master holds against what the ledgers say happened.
// Replication is asynchronous, so the writes the dead master acknowledged last may be gone: an add, a
// pickup (attemptsStarted goes back, the same number is handed out again), a lock renewal, a finish.
// Every loss and every second run must be one of those, confined to the loss window; the rest of
// the at-least-once contract holds as in the other scenarios. Runs are told apart by their lock token.

/**
 * How long before the replica stopped receiving (the kill, or the cut-off of the "replica behind"
 * variant) a write may have been acknowledged and still be lost: on one machine a replica is never
 * more than milliseconds behind, so a second is generous; a loss older than that is not the failover's.
 */
export const REPLICATION_LAG_MS = 1000;

/** Why a job ran again, from the run it superseded (the ledger's records of that run). */
export const CAUSES = {
  lockGone: 'lock gone in the failover (lapsed during the outage, or its write lost): the late finish was refused',
  finishLost: 'completion acknowledged by the dead master and never replicated: the job ran again',
  pickupLost: 'pickup lost with the dead master: the job was taken again with the same attemptsStarted',
};

/**
 * Computes the row of a failover scenario. `jobs` maps each planned id to its hash on the new master
 * (or undefined), `finished` ids to 'completed' | 'failed', `left` counts what is still waiting or
 * active, `ackedAt` the time each add was acknowledged, `failover` what killQueueMaster recorded.
 */
export function checkFailover({ ids, jobs, finished, left, ackedAt, records, failover, workers, crashes, timing }) {
  const { killedAt, deadUntil } = failover;
  const windowFrom = (failover.cutAt ?? killedAt) - REPLICATION_LAG_MS;
  const inWindow = (t) => t !== undefined && t >= windowFrom && t < deadUntil;
  const planned = new Set(ids);
  const starts = records.filter((r) => r.type === 'start');
  const endOf = new Map();
  for (const r of records) if (['accepted', 'refused', 'failed'].includes(r.type) && r.token) endOf.set(r.token, r);

  // Lost: not completed on the new master. Accounted for when its hash is not there and its add
  // was acknowledged inside the window (the add itself was lost with the master).
  const missing = ids.filter((id) => finished.get(id) !== 'completed');
  const lostInWindow = missing.filter((id) => !jobs.get(id) && inWindow(ackedAt.get(id)));
  const lost = missing.filter((id) => !lostInWindow.includes(id) && finished.get(id) !== 'failed');

  // Second runs, each explained by the run before it.
  const causes = Object.fromEntries(Object.keys(CAUSES).map((k) => [k, 0]));
  const untraced = [];
  let fenceRepeated = 0;
  for (const id of ids) {
    const runs = starts.filter((r) => r.id === id);
    for (let i = 1; i < runs.length; i++) {
      // The new master never saw the earlier pickup: the fencing number is handed out again.
      if (runs[i].ats <= runs[i - 1].ats) fenceRepeated++;
      const cause = causeOf(runs[i - 1], runs[i], endOf.get(runs[i - 1].token), { killedAt, deadUntil, inWindow });
      if (cause) causes[cause]++;
      else untraced.push(`${id}#${i + 1}`);
    }
  }

  // Completed twice: only the dead master's acknowledgement inside the window may be followed by
  // another one, and the result stored must be the last accepted run's, with the final fencing number.
  const stale = new Set();
  let completedTwice = 0;
  for (const id of ids) {
    const accepted = records.filter((r) => r.type === 'accepted' && r.id === id);
    if (accepted.length > 1) completedTwice++;
    for (const earlier of accepted.slice(0, -1)) if (!inWindow(earlier.t)) stale.add(id);
    const hash = jobs.get(id);
    if (!hash || finished.get(id) !== 'completed') continue;
    const result = JSON.parse(hash.returnvalue ?? 'null');
    if (!result || result.ats !== Number(hash.ats)) stale.add(id);
    if (accepted.length && result?.token !== accepted.at(-1).token) stale.add(id);
  }

  // Recovery, without restarting a worker: from the kill to each worker's first completion on the
  // new master, and to the rerun of each job a worker held at the kill.
  const afterKill = records.filter((r) => r.type === 'accepted' && r.t >= deadUntil);
  const workerRecovery = workers.map((w) => ({ w, at: afterKill.find((r) => r.w === w)?.t }));
  const held = starts.filter((r) => r.t <= killedAt && !(endOf.get(r.token)?.t <= killedAt));
  const reruns = held.map((r) => starts.find((s) => s.id === r.id && s.t > r.t)).filter(Boolean).map((s) => s.t - killedAt);

  const refused = records.filter((r) => r.type === 'refused');
  const errors = records.filter((r) => r.type === 'error');
  return {
    jobs: ids.length,
    completed: ids.filter((id) => finished.get(id) === 'completed').length,
    lost: lost.length,
    lostIds: lost,
    lostInWindow: lostInWindow.length,
    failed: ids.filter((id) => finished.get(id) === 'failed').length,
    left,
    staleAccepted: stale.size,
    staleIds: [...stale],
    duplicates: Object.values(causes).reduce((a, b) => a + b, 0) + untraced.length,
    causes,
    untraced: untraced.length,
    untracedIds: untraced,
    completedTwice,
    fenceRepeated,
    refused: refused.length,
    refusedCodes: [...new Set(refused.map((r) => r.code))].sort(),
    fencedSinkRefusals: records.filter((r) => r.type === 'end' && r.sinkAccepted === false).length,
    unexpected: starts.filter((r) => !planned.has(r.id)).length,
    crashes: crashes.length + records.filter((r) => r.type === 'crash').length,
    workerErrors: errors.length,
    errorKinds: [...new Set(errors.map((r) => r.error.slice(0, 60)))].slice(0, 5),
    faults: 1,
    promotion: failover.promotion,
    failoverMs: failover.failoverMs,
    firstCompletionMs: afterKill.length ? afterKill[0].t - killedAt : null,
    workersNotRecovered: workerRecovery.filter((r) => r.at === undefined).map((r) => r.w),
    workersRecoveredMs: workerRecovery.every((r) => r.at !== undefined) ? Math.max(...workerRecovery.map((r) => r.at - killedAt)) : null,
    heldAtKill: held.length,
    recoverySamples: reruns.length,
    maxRecoveryMs: reruns.length ? Math.max(...reruns) : null,
    // The failover itself, then what a worker's kill -9 costs a job it held: its lock lapses
    // (lockDuration at most), then the stalled sweep finds it (within a stalledInterval).
    recoveryBoundMs: failover.failoverMs + timing.lockDuration + timing.stalledInterval,
  };
}

/** The cause of `run` (a second run of a job) from the run before it, or undefined when none fits. */
function causeOf(previous, run, previousEnd, { killedAt, deadUntil, inWindow }) {
  if (previousEnd?.type === 'accepted') return inWindow(previousEnd.t) ? 'finishLost' : undefined;
  if (run.ats <= previous.ats) return inWindow(previous.t) ? 'pickupLost' : undefined;
  // A run that spans the failover, whose finish the new master refused (-2 no lock, -6 another token).
  if (previousEnd?.type === 'refused' && previous.t < deadUntil && previousEnd.t > killedAt) return 'lockGone';
  return undefined;
}

/** The verdict of a failover row: the list of checks that failed (empty when it passed). */
export function failoverViolations(row) {
  const problems = [];
  if (row.lost) problems.push(`${row.lost} jobs lost outside the failover's loss window: ${row.lostIds.join(', ')}`);
  if (row.failed) problems.push(`${row.failed} jobs failed`);
  if (row.left) problems.push(`${row.left} jobs left in wait/active/delayed`);
  if (row.staleAccepted) problems.push(`${row.staleAccepted} completions accepted from a stale owner: ${row.staleIds.join(', ')}`);
  if (row.untraced) problems.push(`${row.untraced} second runs not traced to the failover: ${row.untracedIds.join(', ')}`);
  if (row.unexpected) problems.push(`${row.unexpected} executions of jobs never added`);
  if (row.crashes) problems.push(`${row.crashes} worker crashes`);
  if (row.workersNotRecovered.length) problems.push(`workers ${row.workersNotRecovered.join(', ')} completed nothing after the failover`);
  if (row.maxRecoveryMs !== null && row.maxRecoveryMs >= row.recoveryBoundMs) {
    problems.push(`a held job was rerun ${row.maxRecoveryMs} ms after the kill, not under ${row.recoveryBoundMs} ms`);
  }
  return problems;
}
