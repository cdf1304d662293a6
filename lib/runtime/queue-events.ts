import { EventEmitter } from 'node:events';
import { asError, reportOnErrorChannel } from './error-channel.js';
import { filter, Observable, Subject } from 'rxjs';
import { Keys } from '../protocol/keys.js';
import { assertQueueName } from '../protocol/names.js';
import type { RedisClient } from '../protocol/script.js';
import { connectBlocking, dropClient } from './connection.js';
import { resolveQueueEventsOptions, type QueueEventsOptions } from './options.js';

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

/**
 * What the listeners of each event get, in BullMQ's shapes: the entry's fields as an object and
 * the stream entry id (`drained` gets the id alone). `returnvalue` and progress `data` are parsed
 * from the JSON the scripts write; `delay` (when the job is due, ms since the epoch) and `count`
 * are numbers. Fields a script adds beside these (e.g. `failedReason` on the `waiting` or
 * `delayed` of a retry, `reason` on `removed`) are passed on as written.
 */
export interface QueueEventsListeners {
  waiting: [args: { jobId: string; prev?: string; failedReason?: string }, id: string];
  delayed: [args: { jobId: string; delay: number; failedReason?: string }, id: string];
  active: [args: { jobId: string; prev?: string }, id: string];
  progress: [args: { jobId: string; data: unknown }, id: string];
  completed: [args: { jobId: string; returnvalue: unknown; prev?: string }, id: string];
  failed: [args: { jobId: string; failedReason: string; prev?: string }, id: string];
  stalled: [args: { jobId: string }, id: string];
  removed: [args: { jobId: string; reason?: string }, id: string];
  drained: [id: string];
  paused: [args: Record<string, never>, id: string];
  resumed: [args: Record<string, never>, id: string];
  cleaned: [args: { count: number }, id: string];
  /** Reading the stream failed (it is retried) or a listener threw. */
  error: [error: Error];
}

/**
 * QueueEvents reads a queue's events stream with XREAD BLOCK on a connection of its own. Each
 * entry is emitted as a Node event (`on('completed', ({ jobId, returnvalue }) => ...)`, as BullMQ's
 * QueueEvents does) and pushed to the RxJS observable `events$` (`event$(name)` for one name).
 * It starts from the stream's end when it is ready: events written before `waitUntilReady()`
 * resolved are not replayed.
 *
 * The constructor leaves no promise behind: a failure to start rejects `waitUntilReady()`, and
 * read failures go to the `error` event (to stderr while it has no listener); reading goes on.
 */
export class QueueEvents extends EventEmitter<QueueEventsListeners> {
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
    super();
    assertQueueName(name);
    const options = resolveQueueEventsOptions(opts);
    this.keys = new Keys(name, options.prefix);
    this.blockingTimeout = options.blockingTimeout;
    this.client = connectBlocking(opts.connection);
    if (options.autorun) {
      // Observed here, so it never rejects unhandled; callers see the failure through waitUntilReady().
      this.run().catch((error: unknown) => {
        if (!this.closed) this.reportError(asError(error));
      });
    }
  }

  /** The events of one name as an observable, e.g. `event$('completed')`. */
  event$(event: QueueEventName): Observable<QueueEvent> {
    return this.events$.pipe(filter((entry) => entry.event === event));
  }

  /** Starts reading, if not started; resolves once the starting point of the stream is fixed. */
  run(): Promise<void> {
    if (this.closed) return Promise.reject(new Error(`QueueEvents for queue ${this.name} is closed`));
    this.ready ??= this.start();
    return this.ready;
  }

  waitUntilReady(): Promise<void> {
    return this.run();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.state = 'closed';
    // Dropped, not QUIT: its XREAD BLOCK would hold a QUIT until the block times out.
    dropClient(this.client);
    await this.loop?.catch(() => undefined);
    this.subject.complete();
  }

  private get closed(): boolean {
    return this.state === 'closed';
  }

  private async start(): Promise<void> {
    this.state = 'running';
    let last: Array<[string, string[]]>;
    try {
      last = (await this.client.xrevrange(this.keys.events, '+', '-', 'COUNT', 1)) as typeof last;
    } catch (error) {
      if (this.closed) throw new Error(`QueueEvents for queue ${this.name} was closed before it was ready`, { cause: error });
      // Not started: a later waitUntilReady() tries again.
      this.state = 'idle';
      this.ready = undefined;
      throw error;
    }
    if (this.closed) return;
    this.lastId = last[0]?.[0] ?? '0-0';
    this.loop = this.read();
  }

  private async read(): Promise<void> {
    let failing = false;
    while (this.state === 'running') {
      let reply: Array<[string, Array<[string, string[]]>]> | null;
      try {
        reply = (await this.client.xread('BLOCK', this.blockingTimeout, 'STREAMS', this.keys.events, this.lastId)) as typeof reply;
        failing = false;
      } catch (error) {
        if (this.closed) return;
        // Once per outage, not at every retry while Redis is away.
        if (!failing) this.reportError(new Error(`QueueEvents for queue ${this.name} could not read its events (retrying): ${asError(error).message}`, { cause: error }));
        failing = true;
        await new Promise((resolve) => setTimeout(resolve, 100));
        continue;
      }
      for (const [, entries] of reply ?? []) {
        for (const [id, flat] of entries) {
          this.lastId = id;
          this.dispatch(toEvent(this.name, id, flat));
        }
      }
    }
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

function toEvent(queue: string, id: string, flat: string[]): QueueEvent {
  const fields: Record<string, string> = {};
  for (let i = 0; i < flat.length; i += 2) fields[flat[i]] = flat[i + 1];
  const { event, jobId, ...rest } = fields;
  return { event: event as QueueEventName, id, queue, jobId: jobId ?? '', fields: rest };
}

/** BullMQ's listener argument: the fields as an object, the JSON and number ones parsed. */
function listenerArgs(entry: QueueEvent): Record<string, unknown> {
  const args: Record<string, unknown> = entry.jobId ? { jobId: entry.jobId, ...entry.fields } : { ...entry.fields };
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

