// The two systems under test behind one small interface, so every scenario runs the same code
// against each. Both get default options; only the connection (always explicit: the machine's
// shared Redis on 6379 must never be reached by accident) and the concurrency are set.
import { Queue as EchoQueue, Worker as EchoWorker } from '../dist/lib/index.js';
import { Queue as BullQueue, Worker as BullWorker } from 'bullmq';

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
  worker: (name, url, processor, concurrency) =>
    new EchoWorker(name, processor, { connection: connectionOf(url), concurrency, autorun: false }),
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
  ready: (queueOrWorker) => queueOrWorker.waitUntilReady(),
  key: (name, state) => `bull:${name}:${state}`,
};

/** Both systems by the name used on the command line and in child processes. */
export const SYSTEMS = { echomq, bullmq };
