// The checks of the job scheduler scenario, on top of the common ones (checks.mjs, with one job id
// per slot from the first to the last, but the slots coalesced by design: coalescedSlots): one
// scheduler from the simultaneous upserts, one completed job per slot and no other, no slot
// skipped, handlers run again only after a kill of their worker, and the chain running until the
// scheduler was removed.
import { releaseFigures, releaseProblems, releasesAfterFaults, violations } from './checks.mjs';
import { openAttempts } from './ledger.mjs';

const slotOf = (jobId) => Number(/^repeat:[^:]+:(\d+)$/.exec(jobId)?.[1] ?? NaN);
/** A kill this close before a slot counts as around it (the window lateSlots uses too). */
const KILL_LEAD_MS = 20;

/**
 * The slots with no finished job that the scheduler coalesced by design ("missed slots give one
 * job", startSchedulerJob-14): slot k had passed when the step that moved the chain on ran, so that
 * step went past k (k's job never made) or marked k's job to be skipped (removed as superseded).
 * The step's moment is in Redis's events: it makes the job of the next slot after k, so that job's
 * first event is the step's (a step before k's time would have made k's job or claimed it; a job
 * made and lost has events of its own, and stays lost). Counted only when no kill came from the
 * slot before k to k's time: the lateness was then the machine's, not the kills', and the kills
 * (what this scenario is about) missed nothing. Every other missing slot stays lost. A CI run saw
 * it: slot 36's handler started 295 ms late with no kill around, and slot 37 got no job.
 * Returns { id, slot, chainMovedMsAfterSlot } for each such slot, `slot` as an index from `firstSlot`.
 */
export function coalescedSlots({ ids, every, firstSlot, finishedIds, events, faults }) {
  const finished = new Set(finishedIds);
  const kills = faults.filter((f) => f.kind === 'kill -9');
  const firstEvent = new Map();
  for (const e of events) if (!firstEvent.has(e.jobId)) firstEvent.set(e.jobId, e);
  return ids.flatMap((id, i) => {
    if (finished.has(id)) return [];
    const slot = slotOf(id);
    const own = events.filter((e) => e.jobId === id);
    const skipped = own.some((e) => e.event === 'removed' && e.reason === 'superseded');
    if (own.length > 0 && !skipped) return []; // made and not skipped by its step: lost
    const nextMade = ids.slice(i + 1).find((later) => firstEvent.has(later));
    const movedAt = nextMade && firstEvent.get(nextMade).at;
    if (movedAt === undefined || movedAt < slot) return [];
    if (kills.some((k) => k.at >= slot - every - KILL_LEAD_MS && k.at <= slot)) return [];
    return [{ id, slot: (slot - firstSlot) / every, chainMovedMsAfterSlot: movedAt - slot }];
  });
}

/**
 * `ids` are the slots' job ids from `firstSlot` to `lastSlot`; `finishedIds` every id in completed
 * or failed; `events` the queue's event stream; `upserts` the app instances' ledger records;
 * `faults` the kills, each with its slot and offset; `harnessStalls` the gaps in the harness's own
 * event loop ({ at, ms }), to tell a slot missed for want of CPU from one lost to a kill.
 */
export function checkSchedulerRuns({
  ids, every, firstSlot, lastSlot, removedAt, removed, records, faults, finishedIds, events,
  schedulersBeforeRemoval, schedulersAfter, harnessStalls, upserts, firstUpsert, plannedUpserts, workers, timing, coalesced,
}) {
  const coalescedIds = new Set(coalesced.map((c) => c.id));
  const planned = new Set(ids);
  const starts = records.filter((r) => r.type === 'start');
  const kills = faults.filter((f) => f.kind === 'kill -9');

  // Jobs that are no slot's from first to last: another scheduler's, an unaligned slot, one before the first.
  const stray = finishedIds.filter((id) => !planned.has(id));

  // Skipped: removed in the step because a later slot's job was due. No slot may be, here, but
  // those coalesced (coalescedSlots): the killed processes leave others running.
  const skipped = events.filter((e) => e.event === 'removed' && e.reason === 'superseded' && !coalescedIds.has(e.jobId)).map((e) => {
    const slot = slotOf(e.jobId);
    const nearest = kills.reduce((best, k) => (!best || Math.abs(k.at - slot) < Math.abs(best.at - slot) ? k : best), undefined);
    return {
      slot: (slot - firstSlot) / every, removedMsAfterSlot: e.at - slot,
      nearestKill: nearest && { worker: nearest.worker, msAfterSlot: nearest.at - slot },
      runs: starts.filter((r) => r.id === e.jobId).length,
      // The machine stalls from the slot before to the skip: the job waited for a worker that did not run.
      harnessStalls: harnessStalls.filter((st) => st.at + st.ms >= slot - every && st.at <= e.at).map((st) => ({ msAfterSlot: st.at - slot, ms: st.ms })),
    };
  });
  const replaced = events.filter((e) => e.event === 'removed' && e.reason === 'replaced by upsertJobScheduler').length;

  // Handlers that ran again for one slot: each rerun after a kill of the process of the run before.
  // A process dies once (names are never reused), so its kill came after every record it wrote;
  // only the kill's stamp may read earlier: the harness takes it before it sends the signal, and
  // on a loaded machine the victim can still run for a few ms after that stamp. (Seen once, with
  // two busy loops beside the run: a rerun 1.4 s after a start, which only a kill explains, found
  // untraced by a window that began at the start.)
  let reruns = 0;
  const untracedReruns = [];
  for (const id of ids) {
    const runs = starts.filter((r) => r.id === id);
    for (let i = 1; i < runs.length; i++) {
      reruns++;
      const traced = kills.some((k) => k.worker === runs[i - 1].w && k.at <= runs[i].t);
      if (!traced) untracedReruns.push(`slot ${(slotOf(id) - firstSlot) / every} (${runs[i - 1].w} at ${runs[i - 1].t}, then ${runs[i].w} at ${runs[i].t})`);
    }
  }

  // Pickups lost before the handler started (between the pickup and the step, or just after it):
  // the slot's first start came from a later pickup. The slot after such a kill fires on time.
  const takenBeforeKill = ids.filter((id) => starts.some((r) => r.id === id) && !starts.some((r) => r.id === id && r.ats === 1)).length;

  // When each slot's handler first started, from its slot: information, not a check. The slots
  // that started a slot or more late, with the kills from their slot to then.
  const firstStarts = ids.map((id) => starts.find((r) => r.id === id)).filter(Boolean);
  const lateness = firstStarts.map((r) => r.t - slotOf(r.id)).sort((a, b) => a - b);
  const lateSlots = firstStarts.filter((r) => r.t - slotOf(r.id) >= every).map((r) => ({
    slot: (slotOf(r.id) - firstSlot) / every, lateMs: r.t - slotOf(r.id), ats: r.ats,
    // Its first pickup (Redis's active event): late pickups are the fetch's, a late start after an on-time pickup the step's.
    pickedMs: (events.find((e) => e.event === 'active' && e.jobId === r.id)?.at ?? NaN) - slotOf(r.id),
    kills: kills.filter((k) => k.at >= slotOf(r.id) - KILL_LEAD_MS && k.at <= r.t).map((k) => `${k.worker}@${k.at - slotOf(r.id)}`),
  }));
  const firstRound = upserts.filter((u) => u.type === 'upsert' && u.at === firstUpsert);

  // Each slot with no finished job, followed through what Redis and the ledgers saw of it: its
  // events and its handler starts (ms after its slot), and the kills around it. (A slot whose job
  // was never made has no event: the chain went past it.)
  const finished = new Set(finishedIds);
  const missing = ids.filter((id) => !finished.has(id) && !coalescedIds.has(id)).map((id) => {
    const slot = slotOf(id);
    return {
      slot: (slot - firstSlot) / every,
      events: events.filter((e) => e.jobId === id).map((e) => `${e.event}${e.reason ? ` (${e.reason})` : ''}@${e.at - slot}`),
      starts: starts.filter((r) => r.id === id).map((r) => `${r.w}#${r.ats}@${r.t - slot}`),
      kills: kills.filter((k) => k.at >= slot - 2 * every && k.at <= slot + 2000).map((k) => `${k.worker}@${k.at - slot}`),
    };
  });

  // What the protocol bounds after a kill: the running slot job leaves active within
  // lockDuration + stalledInterval (the sweep). Its rerun then needs a pickup: the sweeper's wake-up
  // marker wakes a blocked worker, but when the sweeper is itself killed before it sends the marker
  // (kills come every 400 ms here) the job waits for another worker's drainDelay or the next slot's
  // add. Stop 22 saw a rerun 2230 ms after its kill with nothing lost; so, as in the moves' and
  // prefetch scenarios, fault→rerun is reported and the sweep is what is bounded.
  const releases = releasesAfterFaults({ faults: kills, records, events, held: openAttempts });

  return {
    slots: ids.length,
    every,
    workerCount: workers,
    firstSlotMs: firstSlot,
    stray,
    skippedSlots: skipped,
    replaced,
    reruns,
    untracedReruns,
    takenBeforeKill,
    killsBeforeSlot: kills.filter((k) => k.offsetMs < 0).length,
    killsAfterSlot: kills.filter((k) => k.offsetMs >= 0).length,
    lateSlots,
    harnessStalls: harnessStalls.map((st) => ({ slot: Number(((st.at - firstSlot) / every).toFixed(1)), ms: st.ms })),
    startLatenessMs: lateness.length ? { p50: lateness[Math.floor(lateness.length / 2)], max: lateness.at(-1) } : null,
    schedulersBeforeRemoval: schedulersBeforeRemoval.map((s) => s.key),
    schedulersAfter,
    removed,
    // The last slot run against the removal: the chain must have gone on until then.
    lastSlotBeforeRemovalMs: removedAt - lastSlot,
    upsertsSimultaneous: firstRound.length,
    firstRoundAnswers: [...new Set(firstRound.map((u) => u.job))],
    upsertsDone: upserts.filter((u) => u.type === 'upsert').length,
    upsertsPlanned: plannedUpserts,
    appCrashes: upserts.filter((u) => u.type === 'crash').map((u) => u.error),
    missingSlots: missing,
    coalescedSlots: coalesced.map(({ id, ...rest }) => rest),
    ...releaseFigures(releases, timing),
  };
}

/** The verdict of the scheduler scenario's row: the common checks, then its own. */
export function schedulerViolations(row) {
  const problems = [...violations(row, { boundRecovery: false }), ...releaseProblems(row, 'a slot job running at a kill')];
  if (row.missingSlots.length) problems.push(`slots with no finished job: ${JSON.stringify(row.missingSlots)}`);
  if (row.stray.length) problems.push(`jobs of no slot from the first to the last finished: ${row.stray.join(', ')}`);
  if (row.skippedSlots.length) problems.push(`${row.skippedSlots.length} slots skipped (superseded): ${JSON.stringify(row.skippedSlots)}`);
  if (row.replaced) problems.push(`${row.replaced} jobs removed by a replacing upsert: the same arguments must change nothing`);
  if (row.untracedReruns.length) problems.push(`handlers ran again with no kill of the earlier run's process: ${row.untracedReruns.join('; ')}`);
  if (row.schedulersBeforeRemoval.length !== 1) problems.push(`${row.schedulersBeforeRemoval.length} schedulers before the removal (${row.schedulersBeforeRemoval.join(', ')}), not 1`);
  if (!row.removed || row.schedulersAfter !== 0) problems.push(`the removal left ${row.schedulersAfter} schedulers (removeJobScheduler answered ${row.removed})`);
  // The job of the slot just before the removal may still have been waiting for its pickup (and removed with the scheduler).
  if (row.lastSlotBeforeRemovalMs > 2 * row.every) problems.push(`the last slot run was ${row.lastSlotBeforeRemovalMs} ms before the removal: the chain stopped`);
  if (row.upsertsSimultaneous < 2) problems.push(`only ${row.upsertsSimultaneous} upserts at the shared moment`);
  if (row.upsertsDone !== row.upsertsPlanned || row.appCrashes.length) problems.push(`${row.upsertsDone} of ${row.upsertsPlanned} upserts done; app errors: ${row.appCrashes.join('; ')}`);
  return problems;
}

/** The figures of the scheduler row that the table has no column for. */
export function formatScheduler(row) {
  const late = row.startLatenessMs ? `${row.startLatenessMs.p50} ms median, ${row.startLatenessMs.max} ms max` : '-';
  return [
    `  ${row.slots} slots every ${row.every} ms on ${row.workerCount} workers (lockDuration ${row.timing.lockDuration} ms, ` +
      `lockRenewTime ${row.timing.lockRenewTime} ms, stalledInterval ${row.timing.stalledInterval} ms): ${row.completed} completed, ${row.lost} missing, ${row.skippedSlots.length} skipped, ` +
      `${row.stray.length} stray; ${row.faults} kills (${row.killsBeforeSlot} before a slot, ${row.killsAfterSlot} after; ${row.killsForgone} forgone with only 2 processes ready), ` +
      `${row.coalescedSlots.length} coalesced (${row.coalescedSlots.map((c) => `slot ${c.slot}, the chain moved on +${c.chainMovedMsAfterSlot} ms`).join(', ') || 'none'}), ` +
      `${row.takenBeforeKill} slots whose first pickup died before its handler, ${row.reruns} handlers run again (untraced ${row.untracedReruns.length}); ` +
      `jobs running at a kill: ${row.heldAtKills}, out of active within ${row.maxReleaseMs ?? '-'} ms (bound ${row.releaseBoundMs}), their reruns started within ${row.maxRecoveryMs ?? '-'} ms`,
    `  ${row.upsertsDone} upserts (${row.upsertsSimultaneous} at one moment, answered ${row.firstRoundAnswers.join(' / ')}), ` +
      `${row.schedulersBeforeRemoval.length} scheduler, ${row.replaced} jobs replaced; Redis stalls ≥ 50 ms: ${JSON.stringify(row.redisStalls)}; ` +
      `harness stalls ≥ 100 ms: ${row.harnessStalls.map((s) => `${s.ms} ms at slot ${s.slot}`).join(', ') || 'none'}; ` +
      `handler start after its slot: ${late}; ` +
      `started a slot or more late: ${row.lateSlots.map((s) => `slot ${s.slot} +${s.lateMs} ms (picked +${s.pickedMs}, ats ${s.ats}, kills ${s.kills.join(' ') || 'none'})`).join(', ') || 'none'}`,
  ].join('\n');
}
