import { EchoMQOptionError } from './errors.js';
import { describe } from './names.js';

/**
 * One logical queue over several hash tags (docs/protocol.md, "Partitioned queues"). Partition i
 * of queue `orders` is the queue `orders#i`: its keys are `P:{orders#i}:...`, each partition a
 * queue of its own to every script, so the five fixed scripts run on it unchanged. What spans
 * partitions (routing, ids, counts, the wake-up) is the runtime's, and this file names it.
 */

/** The most partitions a queue may have: one blocking fetch per node covers them all, but every read of the whole queue visits each. */
export const MAX_PARTITIONS = 1024;

/** The partition count of a queue: 1 (not partitioned, the default) to MAX_PARTITIONS. */
export function resolvePartitions(value: unknown): number {
  if (value === undefined) return 1;
  if (!Number.isInteger(value) || (value as number) < 1 || (value as number) > MAX_PARTITIONS) {
    throw new EchoMQOptionError('partitions', `must be a whole number from 1 to ${MAX_PARTITIONS}, got ${describe(value)}`);
  }
  return value as number;
}

/** The queue name of partition `index`: `<name>#<index>`. A queue of one partition keeps its own name. */
export function partitionQueueName(name: string, index: number, partitions: number): string {
  return partitions === 1 ? name : `${name}#${index}`;
}

/** Every partition's queue name, in index order. */
export function partitionQueueNames(name: string, partitions: number): string[] {
  return Array.from({ length: partitions }, (_, i) => partitionQueueName(name, i, partitions));
}

/**
 * A partitioned queue's name holds no `#`: `orders#1` with 4 partitions would be `orders#1#0`...,
 * read by a person (or a runtime) as partition 1 of `orders`.
 */
export function assertPartitionedName(name: string, partitions: number): void {
  if (partitions > 1 && name.includes('#')) {
    throw new EchoMQOptionError('queue name', `"${name}" holds "#", which separates a partitioned queue's name from the partition number`);
  }
}

/**
 * The partition a routing key (opts.partitionKey, else a custom jobId) goes to: FNV-1a (32 bits)
 * of its UTF-8 bytes, modulo the partition count. Every runtime computes the same, so jobs of one
 * key meet in one partition whichever runtime added them (conformance: test/partitions.test.ts).
 */
export function partitionOf(routingKey: string, partitions: number): number {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(routingKey, 'utf8')) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % partitions;
}

/** The prefix of the automatic ids of partition `index` (`<index>-`, so ids read `3-17`); none for a plain queue. */
export function autoIdPrefix(index: number, partitions: number): string {
  return partitions === 1 ? '' : `${index}-`;
}

const AUTO_ID = /^(\d+)-\d+$/;

/** The partition an automatic id names (`3-17` is partition 3), or undefined for any other id. */
export function partitionOfAutoId(jobId: string, partitions: number): number | undefined {
  const match = AUTO_ID.exec(jobId);
  if (!match) return undefined;
  const index = Number(match[1]);
  return index < partitions ? index : undefined;
}

/** In a partitioned queue, `<digits>-<digits>` is an automatic id's shape, so a custom id may not take it. */
export function assertCustomIdForPartitions(jobId: string, partitions: number, field = 'jobId'): void {
  if (partitions > 1 && AUTO_ID.test(jobId)) {
    throw new EchoMQOptionError(field, `"${jobId}" has the shape of a partitioned queue's automatic ids (<partition>-<n>); add a letter, e.g. "order-${jobId}"`);
  }
}

/**
 * The routing key of a job: its partitionKey, else its deduplication id (adds of one id must meet
 * in one partition to be deduplicated, whatever their custom ids), else its custom id; undefined
 * means round-robin.
 */
export function routingKeyOf(opts: { partitionKey?: string; jobId?: string; deduplication?: { id: string } }): string | undefined {
  return opts.partitionKey ?? opts.deduplication?.id ?? opts.jobId;
}

/** A partitionKey is a non-empty string of at most 400 characters. */
export function assertPartitionKey(value: unknown, field = 'partitionKey'): void {
  if (value === undefined) return;
  if (typeof value !== 'string' || value.length === 0 || value.length > 400) {
    throw new EchoMQOptionError(field, `must be a non-empty string of at most 400 characters, got ${describe(value)}`);
  }
}
