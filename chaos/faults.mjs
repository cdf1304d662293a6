// The faults the harness injects. Each one is logged ({ kind, worker?, global?, at }) so that the
// checks can trace every duplicate execution back to a fault.
import { openAttempts, readLedger } from './ledger.mjs';

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** A live, running worker that holds at least one job now, chosen at random (undefined if none). */
export function pickHolder(fleet) {
  const holders = fleet.alive.filter((m) => !m.stopped && openAttempts(readLedger(m)).length > 0);
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

/** kill -9 of a worker holding jobs, then a fresh worker in its place. */
export async function killHolder(ctx) {
  const victim = await waitForHolder(ctx.fleet);
  if (!victim) return;
  ctx.faults.push({ kind: 'kill -9', worker: victim.name, at: Date.now() });
  await ctx.fleet.kill(victim);
  await ctx.fleet.spawnWorker();
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
