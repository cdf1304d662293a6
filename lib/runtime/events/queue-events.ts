import { EventEmitter } from 'node:events';
import { asError, reportOnErrorChannel } from '../core/error-channel.js';
import { Cluster } from 'ioredis';
import { filter, Observable, Subject } from 'rxjs';
import { Keys } from '../../protocol/keys.js';
import { assertQueueName } from '../../protocol/names.js';
import { assertPartitionedName, partitionQueueNames } from '../../protocol/partitions.js';
import { connectEventsReader } from '../core/connection.js';
import { EventsReader, type EventsReaderOwner } from './events-reader.js';
import { resolveQueueEventsOptions, type QueueEventsOptions } from '../core/queue-options.js';

/** The names of the lifecycle events the scripts write to the stream. */
export type QueueEventName =
  | 'waiting' | 'delayed' | 'active' | 'progress' | 'completed' | 'failed' | 'stalled'
  | 'removed' | 'paused' | 'resumed' | 'drained' | 'cleaned' | 'deduplicated';

/** One entry of the queue's events stream: its name, its job (when it has one) and its fields. */
export interface QueueEvent {
  event: QueueEventName;
  /** The stream entry id, `<ms>-<seq>`; unique within one partition's stream only. */
  id: string;
  /** The queue's name: a partitioned queue's own (`orders`), not its partition's (`orders#3`). */
  queue: string;
  /** A partitioned queue's: the partition whose stream held the entry (absent for a plain queue). */
  partition?: number;
  jobId: string;
  /** The other fields of the entry, as written (returnvalue and progress data are JSON). */
  fields: Record<string, string>;
}

/**
 * What the listeners of each event get, in BullMQ's shapes: the entry's fields as an object and
 * the stream entry id (`drained` gets the id alone). `returnvalue` and progress `data` are parsed
 * from the JSON the scripts write; `delay` (when the job is due, ms since the epoch) and `count`
 * are numbers. Fields a script adds beside these (e.g. `failedReason` on the `waiting` or
 * `delayed` of a retry, `reason` on `removed`) are passed on as written.
 */
export interface QueueEventsListeners {
  waiting: [args: WithPartition<{ jobId: string; prev?: string; failedReason?: string }>, id: string];
  delayed: [args: WithPartition<{ jobId: string; delay: number; failedReason?: string }>, id: string];
  active: [args: WithPartition<{ jobId: string; prev?: string }>, id: string];
  progress: [args: WithPartition<{ jobId: string; data: unknown }>, id: string];
  completed: [args: WithPartition<{ jobId: string; returnvalue: unknown; prev?: string }>, id: string];
  failed: [args: WithPartition<{ jobId: string; failedReason: string; prev?: string }>, id: string];
  stalled: [args: WithPartition<{ jobId: string }>, id: string];
  removed: [args: WithPartition<{ jobId: string; reason?: string }>, id: string];
  drained: [id: string];
  paused: [args: WithPartition<object>, id: string];
  resumed: [args: WithPartition<object>, id: string];
  cleaned: [args: WithPartition<{ count: number }>, id: string];
  /**
   * An add was deduplicated (docs/deduplication.md): `jobId` is the job kept, `deduplicatedJobId`
   * the one left out: the add that was dropped (named only when it had a custom jobId: a dropped
   * add takes no id), or with `replace` the delayed job it removed.
   */
  deduplicated: [args: WithPartition<{ jobId: string; deduplicationId: string; deduplicatedJobId?: string }>, id: string];
  /** Reading the stream failed (it is retried) or a listener threw. */
  error: [error: Error];
}

/**
 * A partitioned queue's listeners also get the entry's `partition` (ours; BullMQ has no
 * partitions): a custom job id may name a job in two partitions, and a queue-wide event
 * (`paused`, `resumed`, `cleaned`, `drained`) comes once from each partition it reached.
 * `drained`'s listener gets the entry id alone, as in BullMQ; its partition is on `events$`.
 */
export type WithPartition<Fields> = Fields & { partition?: number };

/**
 * QueueEvents reads a queue's events stream with XREAD BLOCK on a connection of its own. Each
 * entry is emitted as a Node event (`on('completed', ({ jobId, returnvalue }) => ...)`, as BullMQ's
 * QueueEvents does) and pushed to the RxJS observable `events$` (`event$(name)` for one name).
 * It starts from the stream's end when it is ready: events written before `waitUntilReady()`
 * resolved are not replayed.
 *
 * With `partitions: n` it reads the n streams of a partitioned queue (`P:{Q#i}:events`) and emits
 * their entries as one queue's, each with its `partition`. On one server one connection reads
 * them all (one XREAD BLOCK over n streams); on a Cluster each partition has a connection of its
 * own, since an XREAD of streams in several slots is refused (CROSSSLOT) and a blocked command
 * holds its connection: n connections, named `<connectionName or echomq>:events` (EventsReader).
 * Order holds within a partition only: entries of two partitions come in no defined order, and
 * their stream ids (the listeners' `id`) may be equal. It is ready once every stream's end is
 * fixed; a read failure is reported once per outage of each connection.
 *
 * The constructor leaves no promise behind: a failure to start rejects `waitUntilReady()`, and
 * read failures go to the `error` event (to stderr while it has no listener); reading goes on.
 * close() drops every connection it made.
 */
export class QueueEvents extends EventEmitter<QueueEventsListeners> {
  /** The keys of each partition, in partition order (one entry for a plain queue). */
  readonly partitionKeys: readonly Keys[];
  private readonly readers: EventsReader[];
  private readonly subject = new Subject<QueueEvent>();
  private state: 'idle' | 'running' | 'closed' = 'idle';
  private ready?: Promise<void>;
  private loop?: Promise<unknown>;

  /** Every event of the queue, as it is read. */
  readonly events$: Observable<QueueEvent> = this.subject.asObservable();

  constructor(readonly name: string, opts: QueueEventsOptions = {}) {
    super();
    assertQueueName(name);
    const options = resolveQueueEventsOptions(opts);
    const { partitions, prefix, blockingTimeout } = options;
    assertPartitionedName(name, partitions);
    this.partitionKeys = partitionQueueNames(name, partitions).map((queue) => new Keys(queue, prefix));
    const streams = this.partitionKeys.map((keys, partition) => ({ key: keys.events, partition }));
    const perPartition = partitions > 1 && opts.connection instanceof Cluster;
    this.readers = perPartition
      ? streams.map((stream) => new EventsReader(connectEventsReader(opts.connection), [stream], blockingTimeout, `the events of partition ${stream.partition}`))
      : [new EventsReader(connectEventsReader(opts.connection), streams, blockingTimeout, 'its events')];
    if (options.autorun) {
      // Observed here, so it never rejects unhandled; callers see the failure through waitUntilReady().
      this.waitUntilReady().catch((error: unknown) => {
        if (!this.closed) this.reportError(asError(error));
      });
    }
  }

  /** The number of hash tags the queue is spread over (1 unless `partitions` was given). */
  get partitions(): number {
    return this.partitionKeys.length;
  }

  /** The queue's keys. A partitioned queue has a set per partition: see `partitionKeys`. */
  get keys(): Keys {
    if (this.partitionKeys.length > 1) throw new Error(`queue ${this.name} has ${this.partitionKeys.length} partitions, each with its own keys: use queueEvents.partitionKeys`);
    return this.partitionKeys[0];
  }

  /** How many connections it reads on: 1, or on a Cluster one per partition. */
  get connectionCount(): number {
    return this.readers.length;
  }

  /** The events of one name as an observable, e.g. `event$('completed')`. */
  event$(event: QueueEventName): Observable<QueueEvent> {
    return this.events$.pipe(filter((entry) => entry.event === event));
  }

  /**
   * Starts reading (with `autorun: false`); resolves once the starting point of every stream is
   * fixed. Rejects when it runs already, as BullMQ's does: wait for a running one with waitUntilReady().
   */
  run(): Promise<void> {
    if (this.ready && !this.closed) return Promise.reject(new Error(`QueueEvents for queue ${this.name} is already running`));
    return this.waitUntilReady();
  }

  /** Resolves once it reads (starting it, if not started). */
  waitUntilReady(): Promise<void> {
    if (this.closed) return Promise.reject(new Error(`QueueEvents for queue ${this.name} is closed`));
    this.ready ??= this.start();
    return this.ready;
  }

  /** Stops reading and drops every connection it made (each reader's). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.state = 'closed';
    for (const reader of this.readers) reader.close();
    await this.loop?.catch(() => undefined);
    this.subject.complete();
  }

  private get closed(): boolean {
    return this.state === 'closed';
  }

  private async start(): Promise<void> {
    this.state = 'running';
    // Every reader settles before the outcome is decided: a retry never races a start still in flight.
    const started = await Promise.allSettled(this.readers.map((reader) => reader.start()));
    const failed = started.find((outcome): outcome is PromiseRejectedResult => outcome.status === 'rejected');
    if (failed) {
      if (this.closed) throw new Error(`QueueEvents for queue ${this.name} was closed before it was ready`, { cause: failed.reason });
      // Not started: a later waitUntilReady() tries again.
      this.state = 'idle';
      this.ready = undefined;
      throw failed.reason;
    }
    if (this.closed) return;
    const owner: EventsReaderOwner = {
      running: () => this.state === 'running',
      entry: (stream, id, flat) => this.dispatch(toEvent(this.name, id, flat, this.partitions > 1 ? stream.partition : undefined)),
      readFailed: (error, what) => this.reportError(new Error(`QueueEvents for queue ${this.name} could not read ${what} (retrying): ${error.message}`, { cause: error })),
    };
    this.loop = Promise.all(this.readers.map((reader) => reader.read(owner)));
  }

  /** Hands one entry to the observers and the listeners; a listener that throws is reported, never stops the loop. */
  private dispatch(entry: QueueEvent): void {
    this.subject.next(entry);
    if ((entry.event as string) === 'error') return; // a stream entry never poses as our error channel
    try {
      const emit = this.emit as (event: string, ...args: unknown[]) => boolean;
      if (entry.event === 'drained') emit.call(this, 'drained', entry.id);
      else emit.call(this, entry.event, listenerArgs(entry), entry.id);
    } catch (error) {
      this.reportError(asError(error));
    }
  }

  private reportError(error: Error): void {
    reportOnErrorChannel(this as EventEmitter, `QueueEvents for queue ${this.name}`, error);
  }
}

function toEvent(queue: string, id: string, flat: string[], partition: number | undefined): QueueEvent {
  const fields: Record<string, string> = {};
  for (let i = 0; i < flat.length; i += 2) fields[flat[i]] = flat[i + 1];
  const { event, jobId, ...rest } = fields;
  const entry: QueueEvent = { event: event as QueueEventName, id, queue, jobId: jobId ?? '', fields: rest };
  if (partition !== undefined) entry.partition = partition;
  return entry;
}

/** BullMQ's listener argument: the fields as an object, the JSON and number ones parsed. */
function listenerArgs(entry: QueueEvent): Record<string, unknown> {
  const args: Record<string, unknown> = entry.jobId ? { jobId: entry.jobId, ...entry.fields } : { ...entry.fields };
  if (entry.partition !== undefined) args.partition = entry.partition;
  switch (entry.event) {
    case 'completed':
      args.returnvalue = parseJson(entry.fields.returnvalue);
      break;
    case 'progress':
      args.data = parseJson(entry.fields.data);
      break;
    case 'delayed':
      args.delay = Number(entry.fields.delay);
      break;
    case 'cleaned':
      args.count = Number(entry.fields.count);
      break;
  }
  return args;
}

/** A value another writer left that is not JSON is passed on as the string it is. */
function parseJson(text: string | undefined): unknown {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

