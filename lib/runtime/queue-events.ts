import { filter, Observable, Subject } from 'rxjs';
import { Keys } from '../protocol/keys.js';
import { assertQueueName } from '../protocol/names.js';
import type { RedisClient } from '../protocol/script.js';
import { closeClient, connectBlocking, dropClient, type ConnectionInput } from './connection.js';
import { DEFAULTS } from './options.js';

/** The names of the lifecycle events the scripts write to the stream. */
export type QueueEventName =
  | 'waiting' | 'delayed' | 'active' | 'progress' | 'completed' | 'failed' | 'stalled'
  | 'removed' | 'paused' | 'resumed' | 'drained' | 'cleaned';

/** One entry of the queue's events stream: its name, its job (when it has one) and its fields. */
export interface QueueEvent {
  event: QueueEventName;
  /** The stream entry id, `<ms>-<seq>`. */
  id: string;
  queue: string;
  jobId: string;
  /** The other fields of the entry, as written (returnvalue and progress data are JSON). */
  fields: Record<string, string>;
}

export interface QueueEventsOptions {
  connection?: ConnectionInput;
  prefix?: string;
  /** Longest XREAD BLOCK in ms before it is sent again. Default 10,000. */
  blockingTimeout?: number;
  /** Start reading on construction. Default true. */
  autorun?: boolean;
}

/**
 * QueueEvents reads a queue's events stream with XREAD BLOCK on a connection of its own, and
 * exposes it as an RxJS observable. It starts from the stream's end when it is ready: events
 * written before `waitUntilReady()` resolved are not replayed.
 */
export class QueueEvents {
  readonly keys: Keys;
  private readonly client: RedisClient;
  private readonly subject = new Subject<QueueEvent>();
  private readonly blockingTimeout: number;
  private lastId = '$';
  private state: 'idle' | 'running' | 'closed' = 'idle';
  private ready?: Promise<void>;
  private loop?: Promise<void>;

  /** Every event of the queue, as it is read. */
  readonly events$: Observable<QueueEvent> = this.subject.asObservable();

  constructor(readonly name: string, opts: QueueEventsOptions = {}) {
    assertQueueName(name);
    this.keys = new Keys(name, opts.prefix ?? DEFAULTS.prefix);
    this.blockingTimeout = opts.blockingTimeout ?? 10_000;
    this.client = connectBlocking(opts.connection);
    if (opts.autorun ?? true) void this.run();
  }

  /** The events of one name, e.g. `on('completed')`. */
  on(event: QueueEventName): Observable<QueueEvent> {
    return this.events$.pipe(filter((entry) => entry.event === event));
  }

  /** Starts reading, if not started; resolves once the starting point of the stream is fixed. */
  run(): Promise<void> {
    if (this.state === 'closed') return Promise.reject(new Error(`QueueEvents for ${this.name} is closed`));
    this.ready ??= (async () => {
      this.state = 'running';
      const last = (await this.client.xrevrange(this.keys.events, '+', '-', 'COUNT', 1)) as Array<[string, string[]]>;
      this.lastId = last[0]?.[0] ?? '0-0';
      this.loop = this.read();
    })();
    return this.ready;
  }

  waitUntilReady(): Promise<void> {
    return this.run();
  }

  async close(): Promise<void> {
    if (this.state === 'closed') return;
    this.state = 'closed';
    dropClient(this.client);
    await this.loop?.catch(() => undefined);
    await closeClient(this.client);
    this.subject.complete();
  }

  private async read(): Promise<void> {
    while (this.state === 'running') {
      let reply: Array<[string, Array<[string, string[]]>]> | null;
      try {
        reply = (await this.client.xread('BLOCK', this.blockingTimeout, 'STREAMS', this.keys.events, this.lastId)) as typeof reply;
      } catch (error) {
        if (this.state !== 'running') return;
        await new Promise((resolve) => setTimeout(resolve, 100));
        continue;
      }
      for (const [, entries] of reply ?? []) {
        for (const [id, flat] of entries) {
          this.lastId = id;
          this.subject.next(toEvent(this.name, id, flat));
        }
      }
    }
  }
}

function toEvent(queue: string, id: string, flat: string[]): QueueEvent {
  const fields: Record<string, string> = {};
  for (let i = 0; i < flat.length; i += 2) fields[flat[i]] = flat[i + 1];
  const { event, jobId, ...rest } = fields;
  return { event: event as QueueEventName, id, queue, jobId: jobId ?? '', fields: rest };
}
