import { Keys, type JobState } from '../../protocol/keys.js';
import { autoIdPrefix, partitionQueueName } from '../../protocol/partitions.js';
import { FlowScripts } from '../../protocol/flow-scripts.js';
import { AdminScripts } from '../../protocol/admin-scripts.js';
import { JobControlScripts } from '../../protocol/job-control-scripts.js';
import type { RedisClient } from '../../protocol/script.js';
import { SchedulerScripts } from '../../protocol/scheduler-scripts.js';
import { Scripts } from '../../protocol/scripts.js';
import { ADD_BATCH } from '../../protocol/script-registry.js';
import type { AddedJob, NewJob } from '../../protocol/script-shapes.js';
import { CallBatcher } from '../core/call-batcher.js';
import { publishWake } from '../core/wake-channel.js';
import type { FlowOperations, JobContext } from './job-context.js';

/** States whose keys are lists (LRANGE, LLEN); the others are sorted sets. */
export const LIST_STATES = new Set<JobState>(['wait', 'paused', 'active']);

/** What a QueuePart is made of: the queue's connection and names, and the flow operations its jobs reach. */
export interface QueuePartOptions {
  client: RedisClient;
  /** The queue's name (a partition adds `#<index>` to it). */
  name: string;
  /** This part's partition, 0 for a plain queue. */
  index: number;
  /** The queue's partition count (1: not partitioned). */
  partitions: number;
  prefix: string;
  maxEvents: number;
  maxDataSize?: number;
  /** flows/'s FLOW_OPERATIONS: the part's jobs reach flows/ through it (job/job-context.ts). */
  flowOperations: FlowOperations;
}

/**
 * One hash tag of a queue: the whole queue when it has one partition, else partition `index` of
 * it (`<name>#<index>`, lib/protocol/partitions.ts). Every script call and pipeline it makes stays
 * in that one slot. The Queue spreads the work of a partitioned queue over its parts.
 */
export class QueuePart {
  readonly keys: Keys;
  readonly scripts: Scripts;
  readonly schedulerScripts: SchedulerScripts;
  readonly control: JobControlScripts;
  /** Queue-wide: pause, clean, drain, obliterate. */
  readonly admin: AdminScripts;
  readonly flows: FlowScripts;
  readonly context: JobContext;
  /**
   * add() calls made while another is in flight go together as one addJobs-9 call at the end of
   * the turn: a burst of concurrent adds costs Redis one script call per 500 jobs, not one per
   * job. A lone add (none in flight) is sent at once, so its latency is unchanged.
   */
  readonly adds: CallBatcher<NewJob, AddedJob>;

  readonly client: RedisClient;
  readonly index: number;
  private readonly partitions: number;

  constructor({ client, name, index, partitions, prefix, maxEvents, maxDataSize, flowOperations }: QueuePartOptions) {
    this.client = client;
    this.index = index;
    this.partitions = partitions;
    this.keys = new Keys(partitionQueueName(name, index, partitions), prefix);
    this.scripts = new Scripts(client, this.keys, maxEvents, autoIdPrefix(index, partitions));
    this.schedulerScripts = new SchedulerScripts(client, this.keys, maxEvents);
    this.control = new JobControlScripts(client, this.keys, maxEvents);
    this.admin = new AdminScripts(client, this.keys, maxEvents);
    const wake = partitions === 1 ? undefined : () => this.wake();
    this.flows = new FlowScripts(client, this.keys, maxEvents);
    this.context = { queueName: name, keys: this.keys, scripts: this.scripts, control: this.control, flows: this.flows, maxEvents, client, maxDataSize, wake, flowOperations };
    this.adds = new CallBatcher<NewJob, AddedJob>(
      (batch) => {
        const sent = batch.length === 1 ? this.scripts.addJob(batch[0]).then((added) => [added]) : this.scripts.addJobs(batch);
        return this.wakeAfter(sent);
      },
      ADD_BATCH,
      (pending, inFlight) => pending === 1 && inFlight === 0,
    );
  }

  /** Adds many jobs (addJobs-9, ADD_BATCH a call, pipelined), then wakes the partition's workers. */
  async addJobs(jobs: NewJob[]): Promise<Array<AddedJob | Error>> {
    return this.wakeAfter(this.scripts.addJobs(jobs));
  }

  /**
   * Wakes the partition once the call that made the work has answered: a wake-up sent behind it on
   * the wire would arrive first when the call is sent again as EVAL after a NOSCRIPT.
   */
  private wakeAfter<T>(call: Promise<T>): Promise<T> {
    if (this.partitions === 1) return call;
    return call.finally(() => this.wake());
  }

  /** Wakes this partition's workers (publishWake); a plain queue's block on the marker instead. */
  wake(): void {
    if (this.partitions > 1) publishWake(this.client, this.keys);
  }

  /**
   * The ids of each state, ranks `start` to `end` of each in the order asked for: ascending (the
   * next to run first; the oldest finished first) or descending. One round trip. `dueAt` has the
   * due time (score) of each delayed id read.
   */
  async readIds(states: JobState[], start: number, end: number, ascending: boolean[]): Promise<{ ids: string[][]; dueAt: Map<string, number> }> {
    const pipeline = this.client.pipeline();
    const [from, to] = [String(start), String(end)];
    states.forEach((state, i) => {
      const key = this.keys.state(state);
      // Workers take a list's right end: ascending reads from there (reversed below).
      if (LIST_STATES.has(state)) pipeline.lrange(key, ascending[i] ? -end - 1 : start, ascending[i] ? -start - 1 : end);
      else if (state === 'delayed') (ascending[i] ? pipeline.zrange(key, from, to, 'WITHSCORES') : pipeline.zrevrange(key, from, to, 'WITHSCORES'));
      else (ascending[i] ? pipeline.zrange(key, from, to) : pipeline.zrevrange(key, from, to));
    });
    const replies = (await pipeline.exec()) ?? [];
    const dueAt = new Map<string, number>();
    const ids = replies.map(([error, reply], i) => {
      if (error) throw error;
      const found = reply as string[];
      if (LIST_STATES.has(states[i])) return ascending[i] ? found.reverse() : found;
      if (states[i] !== 'delayed') return found;
      const delayedIds: string[] = [];
      for (let j = 0; j < found.length; j += 2) {
        delayedIds.push(found[j]);
        dueAt.set(found[j], Number(found[j + 1]));
      }
      return delayedIds;
    });
    return { ids, dueAt };
  }

  /** The size of each state, in the order given. */
  async counts(states: JobState[]): Promise<number[]> {
    const pipeline = this.client.pipeline();
    for (const state of states) {
      if (LIST_STATES.has(state)) pipeline.llen(this.keys.state(state));
      else pipeline.zcard(this.keys.state(state));
    }
    const replies = (await pipeline.exec()) ?? [];
    return replies.map(([error, reply]) => {
      if (error) throw error;
      return reply as number;
    });
  }
}
