/**
 * Keys: the one place that builds EchoMQ key names (PROTOCOL.md, L1). Nothing else in the
 * library concatenates key strings. Every key of a queue carries the `{queue}` hash tag, so all of
 * them live in one Redis Cluster slot and a script can touch them atomically.
 */
export const DEFAULT_PREFIX = 'emq';

/** The names of a queue's own keys; a custom job id may not be one of them. */
export const QUEUE_KEY_NAMES = [
  'id', 'wait', 'paused', 'active', 'prioritized', 'pc', 'delayed', 'completed', 'failed',
  'stalled', 'stalled-check', 'meta', 'marker', 'limiter', 'events',
] as const;

export type QueueKeyName = (typeof QUEUE_KEY_NAMES)[number];

/** The states whose keys hold job ids. */
export type JobState =
  | 'wait' | 'paused' | 'active' | 'prioritized' | 'delayed' | 'completed' | 'failed';

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

  /** `P:{Q}:<jobId>:logs`. */
  logs(jobId: string): string {
    return `${this.base}${jobId}:logs`;
  }
}
