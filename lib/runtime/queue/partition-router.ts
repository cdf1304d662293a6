/**
 * Partition routing: the part of a queue a new job goes to, and the parts, in rounds, where a job
 * or a deduplication key may be found (docs/protocol.md, "Partitioned queues"). The Queue holds
 * one over its parts; a plain queue's answer is always its one part. It is apart from queue.ts
 * because it is one question (how an id or a key maps to a partition), asked by the adds, the
 * reads and the job control alike, and its only state, the round-robin turn of jobs without a
 * routing key, is no one else's business.
 */
import { partitionOf, partitionOfAutoId, routingKeyOf } from '../../protocol/partitions.js';
import { parseSchedulerJobId } from '../../protocol/scheduler-ids.js';
import type { JobOptions } from '../core/job-options.js';
import type { QueuePart } from '../job/queue-part.js';

export class PartitionRouter {
  /** The partition the next job without a routing key goes to. */
  private roundRobin = 0;

  constructor(private readonly parts: QueuePart[]) {}

  /** The partition a job goes to: by its partitionKey, else its deduplication id, else its custom id, else round-robin. */
  route(opts: JobOptions): QueuePart {
    const count = this.parts.length;
    if (count === 1) return this.parts[0];
    const key = routingKeyOf(opts);
    if (key !== undefined) return this.parts[partitionOf(key, count)];
    const part = this.parts[this.roundRobin];
    this.roundRobin = (this.roundRobin + 1) % count;
    return part;
  }

  /**
   * Where to look for a job, in rounds: a plain queue's one part; the partition an automatic id
   * names; for a custom id, the one its id routes to, then (it may have had a partitionKey) all others.
   */
  partsThatMayHold(jobId: string): QueuePart[][] {
    const count = this.parts.length;
    if (count === 1) return [this.parts];
    const named = partitionOfAutoId(jobId, count);
    if (named !== undefined) return [[this.parts[named]]];
    const scheduled = parseSchedulerJobId(jobId); // a scheduler's jobs live in the partition of its id
    if (scheduled) return [[this.parts[partitionOf(scheduled.schedulerId, count)]]];
    const first = this.parts[partitionOf(jobId, count)];
    return [[first], this.parts.filter((part) => part !== first)];
  }

  /** Where a deduplication key may be: the partition its id routes to, then the others. */
  partsThatMayHoldDeduplication(deduplicationId: string): QueuePart[][] {
    if (this.parts.length === 1) return [this.parts];
    const first = this.parts[partitionOf(deduplicationId, this.parts.length)];
    return [[first], this.parts.filter((part) => part !== first)];
  }
}
