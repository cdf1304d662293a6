// A private Redis Cluster for the bench (three masters on free ports, test/support/redis-cluster.js)
// with a meter connection to each master: per-master readings, a flush between runs, and which
// master holds a hash tag, so a run can say how a queue's partitions landed.
import { Redis } from 'ioredis';
import { startCluster } from '../test/support/redis-cluster.js';

/**
 * Starts the cluster; resolves with { seeds, meters, masterOf(tag), flush(), stop() }. `seeds` is
 * the masters as "host:port,host:port,..." (what a cluster system takes for a URL); `meters` has
 * one plain connection per master, in the same order.
 */
export async function startBenchCluster() {
  const cluster = await startCluster();
  const meters = cluster.nodes.map((node) => new Redis({ ...node, maxRetriesPerRequest: null }));
  try {
    const owners = await slotOwners(meters[0], cluster.nodes);
    return {
      seeds: cluster.nodes.map(({ host, port }) => `${host}:${port}`).join(','),
      meters,
      /** Resolves with the index (in `meters`) of the master that holds hash tag `tag` (CLUSTER KEYSLOT). */
      masterOf: async (tag) => owners[await meters[0].cluster('KEYSLOT', tag)],
      flush: () => Promise.all(meters.map((meter) => meter.flushall())),
      async stop() {
        for (const meter of meters) meter.disconnect();
        await cluster.stop();
      },
    };
  } catch (error) {
    for (const meter of meters) meter.disconnect();
    await cluster.stop();
    throw error;
  }
}

/** Per slot, the index in `nodes` of the master that serves it (CLUSTER SLOTS). */
async function slotOwners(client, nodes) {
  const owners = new Array(16384).fill(-1);
  for (const [first, last, [, port]] of await client.cluster('SLOTS')) {
    const index = nodes.findIndex((node) => node.port === port);
    for (let slot = first; slot <= last; slot++) owners[slot] = index;
  }
  if (owners.includes(-1)) throw new Error('the bench cluster has slots no master serves');
  return owners;
}
