/**
 * Keys: the one place that builds EchoMQ key names (PROTOCOL.md, L1). Nothing else in the
 * library concatenates key strings. Every key of a queue carries the `{queue}` hash tag, so all of
 * them live in one Redis Cluster slot and a script can touch them atomically.
 */
export const DEFAULT_PREFIX = 'emq';

/** The names of a queue's own keys; a custom job id may not be one of them. */
export const QUEUE_KEY_NAMES = [
  'id', 'wait', 'paused', 'active', 'prioritized', 'pc', 'delayed', 'completed', 'failed',
  'stalled', 'stalled-check', 'meta', 'marker', 'limiter', 'events', 'repeat', 'workers',
  'waiting-children', 'flow-pending', 'notices', 'notice-data',
  // Not a key: a job named `de` would have `P:{Q}:de:lock`, the key of deduplication id `lock`.
  'de',
] as const;

export type QueueKeyName = (typeof QUEUE_KEY_NAMES)[number];

/** The states whose keys hold job ids. */
export type JobState =
  | 'wait' | 'paused' | 'active' | 'prioritized' | 'delayed' | 'completed' | 'failed' | 'waiting-children';

export class Keys {
  /** `P:{Q}:`, the prefix of every key of the queue; the scripts get it to build job keys. */
  readonly base: string;
  readonly id: string;
  readonly wait: string;
  readonly paused: string;
  readonly active: string;
  readonly prioritized: string;
  readonly pc: string;
  readonly delayed: string;
  readonly completed: string;
  readonly failed: string;
  readonly stalled: string;
  readonly stalledCheck: string;
  readonly meta: string;
  readonly marker: string;
  readonly limiter: string;
  readonly events: string;
  /** `P:{Q}:repeat`, the job schedulers: a zset of scheduler id to the slot (ms) of its next job. */
  readonly schedulers: string;
  /**
   * `P:{Q}:workers`, the worker registry's index: a zset of worker id to the time (ms) its entry
   * expires unless its heartbeat writes it again (docs/protocol.md, "Worker registry").
   */
  readonly workers: string;
  /** `P:{Q}:waiting-children`, a zset: parents waiting for their children (docs/protocol.md, "Flows"). */
  readonly waitingChildren: string;
  /** `P:{Q}:flow-pending`, a zset: parents whose children's creation the producer has not confirmed, to when written. */
  readonly flowPending: string;
  /** `P:{Q}:notices`, a zset: finished children whose parent has not heard of it yet, to when they finished. */
  readonly notices: string;
  /** `P:{Q}:notice-data`, a hash: child id to its notice (JSON [parentKey, outcome, value, policy]). */
  readonly noticeData: string;
  /**
   * `P:{Q}:wake`, a shard channel (SPUBLISH), not a key: a partitioned queue's workers listen on it
   * for work added to this partition (docs/protocol.md, "Partitioned queues").
   */
  readonly wake: string;

  constructor(readonly queueName: string, readonly prefix: string = DEFAULT_PREFIX) {
    this.base = `${prefix}:{${queueName}}:`;
    this.id = this.base + 'id';
    this.wait = this.base + 'wait';
    this.paused = this.base + 'paused';
    this.active = this.base + 'active';
    this.prioritized = this.base + 'prioritized';
    this.pc = this.base + 'pc';
    this.delayed = this.base + 'delayed';
    this.completed = this.base + 'completed';
    this.failed = this.base + 'failed';
    this.stalled = this.base + 'stalled';
    this.stalledCheck = this.base + 'stalled-check';
    this.meta = this.base + 'meta';
    this.marker = this.base + 'marker';
    this.limiter = this.base + 'limiter';
    this.events = this.base + 'events';
    this.wake = this.base + 'wake';
    this.schedulers = this.base + 'repeat';
    this.workers = this.base + 'workers';
    this.waitingChildren = this.base + 'waiting-children';
    this.flowPending = this.base + 'flow-pending';
    this.notices = this.base + 'notices';
    this.noticeData = this.base + 'notice-data';
  }

  /** `P:{Q}`: how a child names its parent's queue (`job.parent.queueKey`, BullMQ's shape). */
  get queueKey(): string {
    return this.base.slice(0, -1);
  }

  /** A parent's flow key (`P:{Q}:<jobId>:dependencies`, `:processed`, ...; docs/protocol.md, "Flows"). */
  flow(jobId: string, part: 'dependencies' | 'processed' | 'unsuccessful' | 'ignored' | 'pending'): string {
    return `${this.base}${jobId}:${part}`;
  }

  /** The key of a state's id list or zset. */
  state(state: JobState): string {
    return this.base + state;
  }

  /** `P:{Q}:<jobId>`, the job hash. */
  job(jobId: string): string {
    return this.base + jobId;
  }

  /** `P:{Q}:<jobId>:lock`, the seed's `EchoMQ.Keys.lock/2`. */
  lock(jobId: string): string {
    return `${this.base}${jobId}:lock`;
  }

  /** `P:{Q}:repeat:<schedulerId>`, a job scheduler's hash (its schedule, template, next slot, count). */
  scheduler(schedulerId: string): string {
    return `${this.base}repeat:${schedulerId}`;
  }

  /** `P:{Q}:workers:<workerId>`, one worker's registry entry (JSON, under a PX TTL). */
  worker(workerId: string): string {
    return `${this.base}workers:${workerId}`;
  }

  /**
   * `P:{Q}:de:<deduplicationId>`, a string: the id of the job that holds the deduplication id
   * (docs/deduplication.md). Any string may follow `de:`: no other key of the queue starts so, as
   * no job may be named `de`.
   */
  deduplication(deduplicationId: string): string {
    return `${this.base}de:${deduplicationId}`;
  }

  /**
   * `P:{Q}:metrics:<type>`, a hash (count, prevTS, prevCount) and `P:{Q}:metrics:<type>:data`, a
   * list of per-minute counts, newest first: the metrics of finished jobs that workers with
   * `metrics` record (docs/protocol.md, "Metrics"). No job id holds `:`, so none collides.
   */
  metrics(type: 'completed' | 'failed'): { meta: string; data: string } {
    const meta = `${this.base}metrics:${type}`;
    return { meta, data: `${meta}:data` };
  }

  /** `P:{Q}:<jobId>:logs`. */
  logs(jobId: string): string {
    return `${this.base}${jobId}:logs`;
  }
}
