// A failover scenario from start to verdict: a private Redis Cluster (three masters, one replica
// each: test/support/redis-cluster-replicated.js), a fleet of worker processes on ioredis Cluster
// connections, a producer adding jobs in waves, kill -9 of the master serving the queue's slot while
// they run, the promotion of its replica, a drain and the failover checks. The workers are never
// restarted: they must find the new master by themselves. The cluster is stopped in every outcome.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Cluster } from 'ioredis';
import { clusterUnsupported, startReplicatedCluster } from '../test/support/redis-cluster-replicated.js';
import { checkFailover } from './failover-checks.mjs';
import { Fleet } from './fleet.mjs';
import { onInterrupt } from './interrupt.mjs';
import { readLedgers } from './ledger.mjs';
import { sleep } from './faults.mjs';
import { planJobs, produce, readState, waitForReady } from './run-scenario.mjs';
import { TIMING } from './scenarios.mjs';

/**
 * The Cluster options docs/cluster-failures.md recommends: a command that meets CLUSTERDOWN (a
 * failover in progress) or TRYAGAIN waits it out, up to maxRedirections × 100 ms, instead of failing.
 */
export const CLUSTER_OPTIONS = {
  maxRedirections: 600,
  retryDelayOnTryAgain: 100,
  retryDelayOnClusterDown: 100,
  retryDelayOnMoved: 0,
  redisOptions: { maxRetriesPerRequest: null },
};

/** Runs a failover `scenario` under `profile`; resolves with its checked row, or { skipped } without a cluster here. */
export async function runFailoverScenario(scenario, profile, libPath) {
  const unsupported = clusterUnsupported();
  if (unsupported) return { scenario: scenario.name, skipped: unsupported };
  const dir = mkdtempSync(join(tmpdir(), 'echomq-chaos-failover-'));
  let cluster;
  let fleet;
  let queue;
  const clients = [];
  const forget = onInterrupt(async () => {
    fleet?.killAll();
    await cluster?.stop();
    if (!process.env.CHAOS_KEEP) rmSync(dir, { recursive: true, force: true });
  });
  try {
    cluster = await startReplicatedCluster();
    const { Queue } = await import(libPath);
    const queueName = `chaos-${randomBytes(4).toString('hex')}`;
    const slot = Number(await cluster.admin(cluster.ports[0]).cluster('KEYSLOT', `{${queueName}}`));
    const connect = () => {
      const client = new Cluster(cluster.nodes, CLUSTER_OPTIONS);
      client.on('error', () => undefined); // the dead master's connection: ioredis reroutes by itself
      clients.push(client);
      return client;
    };
    queue = new Queue(queueName, { connection: connect() });
    const admin = connect();
    fleet = new Fleet({
      dir,
      waitReady: (member) => waitForReady(member),
      worker: {
        libPath, cluster: { nodes: cluster.nodes, options: CLUSTER_OPTIONS }, queue: queueName, sinkKey: `chaos:{${queueName}}:sink`,
        workerOptions: { concurrency: profile.concurrency, drainDelay: 1, maxStalledCount: 1000, ...TIMING },
      },
    });
    for (let i = 0; i < profile.workers; i++) await fleet.spawnWorker();
    const jobs = planJobs(profile, 0);
    const ackedAt = new Map();
    const ctx = { fleet, cluster, slot, faults: [] };
    await within(profile.drainTimeoutMs, 'the producer and the failover', Promise.all([produce(queue, jobs, profile, ackedAt), scenario.inject(ctx, profile)]));
    const ids = jobs.map((j) => j.id);
    await drain(queue, profile.drainTimeoutMs);
    await fleet.stopAll();
    const state = await readState(admin, queue, ids);
    return {
      scenario: scenario.name,
      ...checkFailover({
        ids, ...state, ackedAt, records: readLedgers(fleet.members), failover: ctx.failover,
        workers: fleet.members.map((m) => m.name), crashes: fleet.crashes(), timing: TIMING,
      }),
    };
  } finally {
    forget();
    await fleet?.stopAll(2000);
    await queue?.close().catch(() => undefined);
    for (const client of clients) client.disconnect();
    await cluster?.stop();
    if (!process.env.CHAOS_KEEP) rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Waits until nothing is left in wait, paused, prioritized, active or delayed (or the timeout).
 * Not "until every job completed": an add the dead master acknowledged and never replicated is gone,
 * and the checks account for it; every job the new master knows must finish.
 */
async function drain(queue, timeoutMs) {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    const counts = await queue.getJobCounts('wait', 'paused', 'prioritized', 'active', 'delayed');
    if (Object.values(counts).every((n) => n === 0)) return;
    await sleep(200);
  }
}

/** `promise`, or a rejection naming `what` after `ms`: no phase of the scenario may hang. */
async function within(ms, what, promise) {
  let timer;
  const timeout = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`${what} did not end within ${ms} ms`)), ms); });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
