// The fault of the 'cancels' scenario: queue.cancelJob from the harness's process while worker
// processes are killed -9 around the cancels (checks: chaos/cancel-checks.mjs). Each target job
// is cancelled at a random moment after its add was acknowledged: delayed, waiting, being picked
// up or running. Of the cancels that find their job running, one in two (alternately, when the
// fleet is whole) is followed by a kill -9 of the process that holds it a few ms after cancelJob
// answered (before its heartbeat could hear of it: the job is left marked in active, for the sweep
// and the next pickup), the other reaches the live worker; every sixth target is
// killed first (its holder, once the job runs) and cancelled a while after, when its lock may
// have lapsed without the sweep having given it back yet (marked in active without a lock).
import { sleep } from './faults.mjs';
import { openAttempts, readLedger } from './ledger.mjs';

/** How long after a kill the cancel of a killed-first target comes: past lockDuration, before or after the sweep. */
const AFTER_KILL_MS = [100, 600, 1200, 300];
/** When after cancelJob answered its job's holder is killed (ms). */
const KILL_OFFSETS_MS = [0, 3, 8, 15];

/** The live, ready worker that holds `id` now (an attempt started and not ended), if any. */
function holderOf(fleet, id) {
  return fleet.alive.find((m) => m.ready && !m.stopped && openAttempts(readLedger(m)).some((a) => a.id === id));
}

/**
 * Cancels every target (`ctx.targets`: ids) once its add was acknowledged (`ctx.ackedAt`), within
 * `windowMs` of it, and kills around the cancels as above; a kill needs `minReady` processes ready
 * (it is skipped otherwise, and a kill after a cancel waits for the next cancel of a running job). Each cancel is recorded in `ctx.cancels`:
 * { id, reason, mode, sentAt, answeredAt, result, atsAfter (the job's ats once it answered),
 * heldBy (the process holding it when the cancel was sent), killedAt (the kill of its holder
 * around it, if any) }.
 */
export async function cancelAround(ctx, { windowMs, minReady, lockDuration }) {
  ctx.cancels = [];
  const respawns = [];
  let killNext = true;
  let kills = 0;
  const kill = async (member, fields) => {
    if (ctx.fleet.alive.filter((m) => m.ready && !m.stopped).length < minReady) return undefined;
    const at = Date.now();
    ctx.faults.push({ kind: 'kill -9', worker: member.name, at, ...fields });
    await ctx.fleet.kill(member);
    respawns.push(ctx.fleet.spawnWorker());
    return at;
  };

  const cancel = async (id, n, mode) => {
    const reason = `chaos ${n}`;
    const heldBy = holderOf(ctx.fleet, id);
    const sentAt = Date.now();
    const result = await ctx.queue.cancelJob(id, reason);
    const answeredAt = Date.now();
    const atsAfter = Number((await ctx.admin.hget(ctx.queue.keys.job(id), 'ats')) ?? 0);
    const record = { id, reason, mode, sentAt, answeredAt, result, atsAfter, heldBy: heldBy?.name };
    ctx.cancels.push(record);
    if (mode !== 'cancel' || !heldBy) return;
    // Killed before its heartbeat hears of the cancel: the job stays marked in active.
    if (killNext && ctx.fleet.alive.filter((m) => m.ready && !m.stopped).length >= minReady) {
      const at = answeredAt + KILL_OFFSETS_MS[kills++ % KILL_OFFSETS_MS.length];
      while (Date.now() < at);
      record.killedAt = await kill(heldBy, { around: 'cancel', id });
      killNext = false;
    } else {
      killNext = true;
    }
  };

  await Promise.all(ctx.targets.map(async (id, n) => {
    while (!ctx.ackedAt.has(id)) await sleep(20);
    if (n % 6 === 5) {
      // Killed first: its holder dies while it runs, then the cancel comes past lockDuration.
      const until = Date.now() + 5000;
      let holder;
      while (!(holder = holderOf(ctx.fleet, id)) && Date.now() < until) await sleep(20);
      const killedAt = holder && (await kill(holder, { around: 'killed first', id }));
      if (killedAt) {
        await sleep(Math.max(0, killedAt + lockDuration + AFTER_KILL_MS[n % AFTER_KILL_MS.length] - Date.now()));
        return cancel(id, n, 'killed first');
      }
      return cancel(id, n, 'cancel');
    }
    await sleep(Math.max(0, ctx.ackedAt.get(id) + Math.floor(Math.random() * windowMs) - Date.now()));
    return cancel(id, n, 'cancel');
  }));
  await Promise.all(respawns);
}
