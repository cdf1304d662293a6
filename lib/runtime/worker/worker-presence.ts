import type { ChainableCommander } from 'ioredis';
import { hostname } from 'node:os';
import type { Keys } from '../../protocol/keys.js';
import { CANCELS_FIELD } from '../../protocol/cancels.js';
import { LIMIT_FIELDS_READ, parseLimitValues, registryTtl, type WorkerInfo } from '../../protocol/queue-limits.js';
import type { RedisClient } from '../../protocol/script.js';
import type { TickPassenger } from '../locks/lock-holder.js';
import type { WorkerLimits } from './worker-limits.js';

const HOST = hostname();

/** Who the worker is, as its registry entry says. */
export interface PresenceIdentity {
  id: string;
  name?: string;
  concurrency: number;
  lockRenewTime: number;
}

/** The meta fields the presence reads, in this order: the limits, then the cancels counter. */
const META_FIELDS_READ = [...LIMIT_FIELDS_READ, CANCELS_FIELD];

/**
 * A worker's part in the worker registry (queue.getWorkers()) and its reading of the queue's
 * limits and cancels: three commands (ZADD of the index, SET of its entry under a PX TTL, HMGET of
 * the limit fields and the `cancels` counter of meta), sent once at start and then in every
 * heartbeat tick of its LockManager, in the tick's own pipeline after the renewals. Nothing is sent
 * per job. The keys are the queue's (a partitioned queue's: partition 0's), so the three stay in one slot.
 *
 * An entry lives registryTtl(lockRenewTime) past its last write: a worker that stops ticking (a
 * killed process) drops out by itself; close() removes it at once.
 */
export class WorkerPresence implements TickPassenger {
  private startedAt = 0;

  constructor(
    private readonly client: RedisClient,
    private readonly keys: Keys,
    private readonly identity: PresenceIdentity,
    private readonly running: () => number,
    private readonly limits: WorkerLimits,
    /** Told the `cancels` counter at each reading (null when never set): CancelWatch.read. */
    private readonly cancels?: (count: string | null) => void,
  ) {}

  /**
   * The start: drops the entries that expired (workers gone without a close; so the index never
   * grows with dead workers, even where nobody calls getWorkers), writes this worker's and reads
   * the limits. One round trip. Throws when the limits could not be read: a worker must not take
   * jobs blind to a queue-wide bound.
   */
  async start(): Promise<void> {
    this.startedAt ||= Date.now();
    const pipeline = this.client.pipeline();
    pipeline.zremrangebyscore(this.keys.workers, '-inf', `(${Date.now()}`);
    this.board(pipeline);
    const replies = ((await pipeline.exec()) ?? []) as Array<[Error | null, unknown]>;
    const failed = replies.find(([error]) => error);
    if (failed) throw failed[0];
    this.arrive(replies.slice(1));
  }

  board(pipeline: ChainableCommander): void {
    const now = Date.now();
    const ttl = registryTtl(this.identity.lockRenewTime);
    // The entry before its index member: a process killed between the two leaves an entry whose
    // member expires first, never a member whose entry expired first (getWorkers would list
    // nothing while the index still held it, until the member's own expiry).
    pipeline.set(this.keys.worker(this.identity.id), JSON.stringify(this.entry(now)), 'PX', ttl);
    pipeline.zadd(this.keys.workers, now + ttl, this.identity.id);
    pipeline.hmget(this.keys.meta, ...META_FIELDS_READ);
  }

  arrive(replies: Array<[Error | null, unknown]> | Error): void {
    // A tick that failed keeps the limits last read; the next tick reads them again.
    if (replies instanceof Error) return;
    const [error, read] = replies[2] ?? [new Error('no reply')];
    if (error) return;
    const values = read as Array<string | null>;
    this.limits.update(parseLimitValues(values));
    this.cancels?.(values[LIMIT_FIELDS_READ.length] ?? null);
  }

  /** close(): the entry goes at once (getWorkers stops listing the worker). */
  async leave(): Promise<void> {
    if (this.startedAt === 0) return;
    await this.client.pipeline().zrem(this.keys.workers, this.identity.id).del(this.keys.worker(this.identity.id)).exec();
  }

  private entry(now: number): WorkerInfo {
    const { id, name, concurrency } = this.identity;
    return { id, ...(name === undefined ? {} : { name }), host: HOST, pid: process.pid, concurrency, running: this.running(), startedAt: this.startedAt, lastSeen: now };
  }
}
