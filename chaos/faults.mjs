// The faults the harness injects. Each one is logged ({ kind, worker?, global?, at }) so that the
// checks can trace every duplicate execution back to a fault.
import { closeSync, existsSync, openSync, readSync, statSync } from 'node:fs';
import { openAttempts, readLedger } from './ledger.mjs';

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** A live, running worker that holds at least one job now, chosen at random (undefined if none). */
export function pickHolder(fleet) {
  // Not one another fault is ending (two faults at once on one worker would count as one).
  const holders = fleet.alive.filter((m) => !m.stopped && !m.ending && openAttempts(readLedger(m)).length > 0);
  return holders[Math.floor(Math.random() * holders.length)];
}

/** Waits (up to `timeoutMs`) until some worker holds a job, and returns it. */
export async function waitForHolder(fleet, timeoutMs = 10_000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const holder = pickHolder(fleet);
    if (holder || Date.now() > until) return holder;
    await sleep(50);
  }
}

/** Ends a worker holding jobs with `end` (a fault of `kind`), then a fresh worker in its place. */
async function replaceHolder(ctx, kind, end) {
  const victim = await waitForHolder(ctx.fleet);
  if (!victim) return;
  victim.ending = true;
  ctx.faults.push({ kind, worker: victim.name, at: Date.now() });
  await end(victim);
  await ctx.fleet.spawnWorker();
}

/** kill -9 of a worker holding jobs, then a fresh worker in its place. */
export function killHolder(ctx) {
  return replaceHolder(ctx, 'kill -9', (victim) => ctx.fleet.kill(victim));
}

/** An orderly close of a worker holding jobs (SIGTERM: worker.close()), then a fresh worker in its place. */
export function closeHolder(ctx) {
  return replaceHolder(ctx, 'close', (victim) => ctx.fleet.close(victim));
}

/** SIGSTOP of a worker holding jobs for `ms` (longer than lockDuration), then SIGCONT. */
export async function pauseHolder(ctx, ms) {
  const victim = await waitForHolder(ctx.fleet);
  if (!victim) return;
  ctx.faults.push({ kind: 'SIGSTOP', worker: victim.name, at: Date.now() });
  ctx.fleet.pause(victim);
  await sleep(ms);
  ctx.fleet.resume(victim);
}

/** CLIENT KILL of every normal connection but the harness's admin one: all workers lose theirs. */
export async function killConnections(ctx) {
  ctx.faults.push({ kind: 'CLIENT KILL', global: true, at: Date.now() });
  await ctx.admin.client('KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
}

/** Stops Redis (SIGTERM, AOF appendfsync always) and starts it again after `downMs`. */
export async function restartRedis(ctx, downMs) {
  ctx.faults.push({ kind: 'redis restart', global: true, at: Date.now() });
  await ctx.redis.restart({ downMs });
}

/**
 * kill -9 of the master that serves the queue's slot (ctx.cluster, ctx.slot) while a worker holds
 * jobs, then waits for its replica to take over. With `behindMs`, the master first cuts its replica
 * off (no resync allowed) and goes on acknowledging writes for at least that long, until a worker
 * holds jobs again: the loss window of asynchronous replication, opened on purpose, with adds,
 * pickups, renewals and finishes in it. Sets ctx.failover, which the failover checks read.
 */
export async function killQueueMaster(ctx, { behindMs = 0 } = {}) {
  const { cluster, slot } = ctx;
  await waitForHolder(ctx.fleet);
  const dead = await cluster.masterOf(slot);
  const replica = await cluster.replicaOf(dead);
  let cutAt;
  if (behindMs > 0) {
    await cluster.admin(dead).call('ACL', 'SETUSER', 'default', '-psync', '-sync');
    await cluster.admin(dead).call('CLIENT', 'KILL', 'TYPE', 'replica');
    cutAt = Date.now();
    await sleep(behindMs);
    await waitForHolder(ctx.fleet, 5000);
  }
  const killedAt = Date.now();
  ctx.faults.push({ kind: 'master kill -9', global: true, at: killedAt });
  await cluster.kill(dead);
  // cluster-node-timeout is short here (1000 ms), so the promotion comes by itself within seconds;
  // on a slow machine it is forced (CLUSTER FAILOVER TAKEOVER on the replica) rather than waited for.
  let promotion = 'automatic';
  let failover;
  try {
    failover = await cluster.waitForFailover(slot, dead, 15_000);
  } catch {
    promotion = 'TAKEOVER';
    await cluster.admin(replica).cluster('FAILOVER', 'TAKEOVER');
    failover = await cluster.waitForFailover(slot, dead, 15_000);
  }
  ctx.failover = {
    killedAt, cutAt, deadPort: dead, replicaPort: replica, newMasterPort: failover.port, promotion,
    // Until cluster-node-timeout has passed no replica can have been promoted: every reply a worker
    // got before then came from the dead master.
    deadUntil: killedAt + cluster.nodeTimeoutMs,
    failoverMs: Date.now() - killedAt,
  };
}

/** Where around a slot the kills land (ms from the slot): before the pickup, in it, in the step, in the handler. */
export const SLOT_KILL_OFFSETS_MS = [-15, -5, -2, 0, 1, 2, 3, 5, 8, 12, 20, 40];

/**
 * kill -9 of a worker process a few ms before or after a job scheduler's slot, every
 * `killEverySlots` slots from `firstSlot` for `slots` slots, each followed by a fresh process in
 * the victim's place (not waited for: the next kill may come first). The victim is any ready
 * process, holding a job or not: which process takes a slot's job is not known in advance. At
 * least two processes stay up: with one (2 or 3 Workers, busy with handlers longer than a slot)
 * a slot's job can wait past the next slot and be skipped for want of workers, not for the kill. Resolves once every replacement
 * is ready. Each fault records its slot and its offset from it.
 */
export async function killAtSlotBoundaries(ctx, { firstSlot, every, slots, killEverySlots = 2 }) {
  const respawns = [];
  for (let k = 1, n = 0; k < slots; k += killEverySlots, n++) {
    const slot = firstSlot + k * every;
    const at = slot + SLOT_KILL_OFFSETS_MS[n % SLOT_KILL_OFFSETS_MS.length];
    if (at - Date.now() > 5) await sleep(at - Date.now() - 5);
    while (Date.now() < at);
    const ready = ctx.fleet.alive.filter((m) => m.ready);
    if (ready.length <= 2) {
      ctx.killsForgone = (ctx.killsForgone ?? 0) + 1;
      continue;
    }
    const victim = ready[Math.floor(Math.random() * ready.length)];
    const killedAt = Date.now();
    ctx.faults.push({ kind: 'kill -9', worker: victim.name, at: killedAt, slot, offsetMs: killedAt - slot });
    await ctx.fleet.kill(victim);
    respawns.push(ctx.fleet.spawnWorker(victim.overrides));
  }
  // Past the last slot, so that the kill phase covers `slots` slots before the scheduler is removed.
  await sleep(Math.max(0, firstSlot + slots * every - Date.now()));
  await Promise.all(respawns);
}

/**
 * When after a handler ledgered the move it is about to make the kill lands (ms): before its first
 * write, between the writes, in flight, after. A step's updateData and moveToDelayed took 1 to 10 ms
 * together on an idle machine (AOF, appendfsync always), a give-back's updateData, rateLimit and
 * moveJobFromActiveToWait 3 to 26 ms.
 */
export const MOVE_KILL_OFFSETS_MS = { moving: [0, 2, 6, 1, 12, 4], limiting: [0, 5, 15, 2, 30, 8], retrying: [0, 1, 3, 0, 6, 2] };

/**
 * kill -9 of a worker process right around a handler's own move out of active, and of one at a
 * random moment, in turn: for a move the harness tails the ledgers for a `moving` record (a job run
 * in steps, about to save its progress and move to delayed) or a `limiting` one (about to save its
 * mark, call rateLimit and give its job back) and kills that process MOVE_KILL_OFFSETS_MS after the
 * record was written (at once when the harness saw it later than that); the third kill of each
 * round takes a process holding jobs, whatever they are doing. A fresh process takes the victim's
 * place. Each kill waits until `minReady` processes are ready (the fleet whole again), so that one
 * kill's jobs are rerun by a whole fleet, as in the 'kill -9' scenario. Stops after `kills`, or once no move was ledgered for `quietMs` (the load is over). Each
 * fault aimed at a move names its job and run. `types` is the turn (default moving, limiting,
 * random); the retries scenario aims at `retrying` records (a handler about to throw on a first
 * attempt: its retry joins the turn's finishes).
 */
export async function killAroundMoves(ctx, { kills, minReady, quietMs = 2000, types = ['moving', 'limiting', 'random'] }) {
  const tail = new LedgerTail();
  const respawns = [];
  for (let n = 0; n < kills; n++) {
    while (ctx.fleet.alive.filter((m) => m.ready).length < minReady) await sleep(10);
    const type = types[n % types.length];
    if (type === 'random') {
      const victim = pickHolder(ctx.fleet);
      if (!victim) continue;
      ctx.faults.push({ kind: 'kill -9', worker: victim.name, at: Date.now() });
      await ctx.fleet.kill(victim);
      respawns.push(ctx.fleet.spawnWorker());
      continue;
    }
    const trigger = await tail.waitFor(ctx.fleet, type, quietMs);
    if (!trigger) break;
    const { member, record } = trigger;
    const offsets = MOVE_KILL_OFFSETS_MS[type];
    const at = record.t + offsets[Math.floor(n / 3) % offsets.length];
    if (at - Date.now() > 2) await sleep(at - Date.now() - 2);
    while (Date.now() < at);
    const killedAt = Date.now();
    ctx.faults.push({ kind: 'kill -9', worker: member.name, at: killedAt, around: type, id: record.id, ats: record.ats, movingAt: record.t, offsetMs: killedAt - record.t });
    await ctx.fleet.kill(member);
    respawns.push(ctx.fleet.spawnWorker());
  }
  await Promise.all(respawns);
}

/**
 * The new lines of every live, ready worker's ledger since the last look (a worker started since
 * is read from its start), polled every 2 ms: reading whole ledgers that often would cost the
 * harness more CPU than the workers it watches.
 */
class LedgerTail {
  #read = new Map();

  /** The first `type` record written after this call by a live, ready, running worker. */
  async waitFor(fleet, type, timeoutMs) {
    this.#skipToEnd(fleet);
    const until = Date.now() + timeoutMs;
    while (Date.now() < until) {
      for (const member of fleet.alive.filter((m) => m.ready && !m.stopped)) {
        const record = this.#newRecords(member).find((r) => r.type === type);
        if (record) return { member, record };
      }
      await sleep(2);
    }
    return undefined;
  }

  #skipToEnd(fleet) {
    for (const member of fleet.alive) this.#newRecords(member);
  }

  #newRecords(member) {
    if (!existsSync(member.ledgerFile)) return [];
    const from = this.#read.get(member) ?? 0;
    const size = statSync(member.ledgerFile).size;
    if (size <= from) return [];
    const buffer = Buffer.alloc(size - from);
    const fd = openSync(member.ledgerFile, 'r');
    try {
      readSync(fd, buffer, 0, buffer.length, from);
    } finally {
      closeSync(fd);
    }
    // Whole lines only: a line being appended now is read at the next look.
    const end = buffer.lastIndexOf(0x0a) + 1;
    this.#read.set(member, from + end);
    return buffer.subarray(0, end).toString('utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line));
  }
}
