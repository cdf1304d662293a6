// The two systems under test behind one small interface, so every scenario runs the same code
// against each. Both get default options; only the connection (always explicit: the machine's
// shared Redis on 6379 must never be reached by accident) and the concurrency are set.
import { FlowProducer as EchoFlowProducer, Queue as EchoQueue, Worker as EchoWorker } from '../dist/lib/index.js';
import { FlowProducer as BullFlowProducer, Queue as BullQueue, Worker as BullWorker } from 'bullmq';
import { Cluster } from 'ioredis';

/** Connection options for both systems, from a redis:// URL. */
export function connectionOf(url) {
  const { hostname, port } = new URL(url);
  return { host: hostname, port: Number(port) };
}

/** EchoMQ, imported from the built library (dist/), as users run it. */
const echomq = {
  id: 'echomq',
  name: 'EchoMQ',
  queue: (name, url) => new EchoQueue(name, { connection: connectionOf(url) }),
  /** `prefetch`: EchoMQ's own option (docs/prefetch.md); BullMQ has none and ignores it. */
  worker: (name, url, processor, concurrency, prefetch) =>
    new EchoWorker(name, processor, { connection: connectionOf(url), concurrency, ...(prefetch ? { prefetch } : {}), autorun: false }),
  /** A worker whose handler is the default export of `file`, run in worker threads or child processes. */
  sandboxWorker: (name, url, file, concurrency, useWorkerThreads) =>
    new EchoWorker(name, file, { connection: connectionOf(url), concurrency, useWorkerThreads, autorun: false }),
  /** A FlowProducer: trees of jobs over any queues, a parent run once its children finished. */
  flowProducer: (url) => new EchoFlowProducer({ connection: connectionOf(url) }),
  /** Resolves once the queue's connection is up, so connecting is not timed. */
  ready: (queueOrWorker) => (queueOrWorker.waitUntilReady ? queueOrWorker.waitUntilReady() : queueOrWorker.client.ping()),
  /** The key of a queue's state, for the self-checks. */
  key: (name, state) => `emq:{${name}}:${state}`,
};

/** BullMQ 6.x; workers need maxRetriesPerRequest: null, as its docs require. */
const bullmq = {
  id: 'bullmq',
  name: 'BullMQ',
  queue: (name, url) => new BullQueue(name, { connection: connectionOf(url) }),
  worker: (name, url, processor, concurrency) =>
    new BullWorker(name, processor, { connection: { ...connectionOf(url), maxRetriesPerRequest: null }, concurrency, autorun: false }),
  sandboxWorker: (name, url, file, concurrency, useWorkerThreads) =>
    new BullWorker(name, file, { connection: { ...connectionOf(url), maxRetriesPerRequest: null }, concurrency, useWorkerThreads, autorun: false }),
  flowProducer: (url) => new BullFlowProducer({ connection: connectionOf(url) }),
  ready: (queueOrWorker) => queueOrWorker.waitUntilReady(),
  key: (name, state) => `bull:${name}:${state}`,
};

/** Both systems by the name used on the command line and in child processes. */
export const SYSTEMS = { echomq, bullmq };

/**
 * EchoMQ on a Redis Cluster, its queues and workers `partitions` wide (1: a plain queue). Its
 * "url" is the masters as "host:port,host:port,...". Each queue and worker gets an ioredis Cluster
 * of its own, as the docs advise (maxRetriesPerRequest: null); EchoMQ never closes a Cluster it is
 * given, so disconnect() closes them all once the queues and workers are closed.
 */
export function echomqOnCluster(partitions) {
  const clusters = [];
  const connect = (seeds) => {
    const cluster = new Cluster(seeds.split(',').map((seed) => connectionOf(`redis://${seed}`)), { redisOptions: { maxRetriesPerRequest: null } });
    cluster.on('error', () => undefined); // what matters reaches the queue's calls and the worker's 'error'
    clusters.push(cluster);
    return cluster;
  };
  return {
    id: `echomq-cluster-${partitions}`,
    name: partitions === 1 ? 'plain queue' : `${partitions} partitions`,
    partitions,
    queue: (name, seeds) => new EchoQueue(name, { connection: connect(seeds), partitions }),
    worker: (name, seeds, processor, concurrency) =>
      new EchoWorker(name, processor, { connection: connect(seeds), partitions, concurrency, autorun: false }),
    ready: echomq.ready,
    disconnect: () => clusters.splice(0).forEach((cluster) => cluster.disconnect()),
  };
}

/** A system by its id: `echomq`, `bullmq`, or `echomq-cluster-<partitions>` (for child processes). */
export function systemById(id) {
  const partitions = /^echomq-cluster-(\d+)$/.exec(id)?.[1];
  return partitions ? echomqOnCluster(Number(partitions)) : SYSTEMS[id];
}
