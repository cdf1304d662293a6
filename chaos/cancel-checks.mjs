// The checks of the 'cancels' scenario (on top of the common ones, checks.mjs, for the jobs nobody
// cancelled): every job queue.cancelJob answered true for ends failed as cancelled, with its
// reason, once, never run after the cancel and never retried; a cancel reaches a live worker that
// runs the job by its second heartbeat tick (2 x lockRenewTime + 100 ms: here, among kills and
// respawns on a loaded machine, a tick may fire late; test/cancel-job.test.ts holds the quiet
// bound of lockRenewTime + 100 ms). What Redis holds at the end, its event stream and the
// ledgers against the cancels the harness made (chaos/cancels.mjs).
import { violations } from './checks.mjs';

/**
 * `cancels`: the harness's records (cancels.mjs); `jobs` each id to its final hash; `finished`
 * ids to 'completed' | 'failed'; `records` the ledgers; `events` the queue's stream.
 */
export function checkCancels({ cancels, jobs, finished, records, events, timing }) {
  const notCancelled = [];
  const notOnce = [];
  const runAfter = [];
  const refused = [];
  const delivery = [];
  const viaPickup = [];
  const byMode = {};
  for (const c of cancels) {
    byMode[c.mode] = (byMode[c.mode] ?? 0) + 1;
    if (!c.result) {
      refused.push(`${c.id} (${finished.get(c.id) ?? 'unfinished'})`);
      continue;
    }
    const hash = jobs.get(c.id);
    const expected = `job ${c.id} was cancelled: ${c.reason}`;
    if (finished.get(c.id) !== 'failed' || hash?.failedReason !== expected || hash?.cxl !== c.reason) {
      // When its runs started, from the cancel: a cancel sent late in a run may meet its end.
      const runs = records.filter((r) => r.type === 'start' && r.id === c.id).map((r) => `${r.w}#${r.ats} ${r.t - c.sentAt} ms`);
      notCancelled.push(`${c.id} (${finished.get(c.id) ?? 'unfinished'}: ${hash?.failedReason ?? hash?.returnvalue ?? 'no hash'}; ${c.mode} held by ${c.heldBy ?? 'none'}, runs started ${runs.join(', ') || 'none'})`);
    }
    const ends = events.filter((e) => e.jobId === c.id && (e.event === 'failed' || e.event === 'completed'));
    if (ends.length !== 1 || ends[0].event !== 'failed') notOnce.push(`${c.id} (${ends.map((e) => e.event).join(', ') || 'none'})`);
    // A pickup after the mark carries it and fails the job without its handler.
    const late = records.filter((r) => r.type === 'start' && r.id === c.id && r.ats > c.atsAfter);
    if (late.length) runAfter.push(`${c.id} (started at ats ${late.map((r) => r.ats).join(', ')}, the cancel answered at ats ${c.atsAfter})`);
    // The worker's side: its cancelled$ (ledgered), from a heartbeat's look or from a pickup.
    const heard = records.find((r) => r.type === 'cancelled' && r.id === c.id && r.t >= c.sentAt);
    if (!heard) continue;
    if (heard.ats > c.atsAfter || c.killedAt || c.mode === 'killed first') viaPickup.push(heard.t - c.sentAt);
    else delivery.push(heard.t - c.sentAt);
  }
  return {
    cancels: cancels.length,
    cancelledJobs: cancels.filter((c) => c.result).length,
    cancelsByMode: byMode,
    cancelledAtOnce: cancels.filter((c) => c.result && !records.some((r) => r.type === 'cancelled' && r.id === c.id)).length,
    cancelsHeldAtKill: cancels.filter((c) => c.killedAt).length,
    notCancelled,
    notOnce,
    runAfter,
    refusedCancels: refused,
    deliveries: delivery.length,
    maxDeliveryMs: delivery.length ? Math.max(...delivery) : null,
    deliveryBoundMs: 2 * timing.lockRenewTime + 100,
    maxViaPickupMs: viaPickup.length ? Math.max(...viaPickup) : null,
  };
}

/** The verdict of the row: the common checks (cancelled jobs' failures expected), then the cancels'. */
export function cancelViolations(row) {
  const problems = violations(row, { boundRecovery: false });
  if (row.notCancelled.length) problems.push(`jobs cancelled (true) that did not end failed as cancelled: ${row.notCancelled.join(', ')}`);
  if (row.notOnce.length) problems.push(`cancelled jobs not failed exactly once: ${row.notOnce.join(', ')}`);
  if (row.runAfter.length) problems.push(`cancelled jobs run after the cancel: ${row.runAfter.join(', ')}`);
  if (row.refusedCancels.length) problems.push(`cancels answered false for jobs still to finish: ${row.refusedCancels.join(', ')}`);
  if (row.maxDeliveryMs !== null && row.maxDeliveryMs > row.deliveryBoundMs) {
    problems.push(`a cancel reached the live worker running its job ${row.maxDeliveryMs} ms after cancelJob, not within ${row.deliveryBoundMs} ms`);
  }
  if (!row.deliveries || !row.cancelsHeldAtKill || !row.cancelledAtOnce) {
    problems.push(`${row.deliveries} cancels reached a running worker, ${row.cancelsHeldAtKill} were followed by a kill of the holder, ${row.cancelledAtOnce} failed a job still to run: the scenario did not exercise all three`);
  }
  return problems;
}

/** The figures of the row that the table has no column for. */
export function formatCancels(row) {
  return `  ${row.cancels} cancels (${Object.entries(row.cancelsByMode).map(([m, n]) => `${n} ${m}`).join(', ')}): ${row.cancelledAtOnce} failed at once, ` +
    `${row.deliveries} reached the live worker running the job within ${row.maxDeliveryMs ?? '-'} ms (bound ${row.deliveryBoundMs}), ` +
    `${row.cancelsHeldAtKill} followed by a kill of the holder; jobs failed by the pickup after a kill or a sweep within ${row.maxViaPickupMs ?? '-'} ms of the cancel; ` +
    `worker 'error' events: ${row.workerErrors}`;
}
