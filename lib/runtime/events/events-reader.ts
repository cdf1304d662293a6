import { asError } from '../core/error-channel.js';
import type { RedisClient } from '../../protocol/script.js';
import { dropClient } from '../core/connection.js';

/** One events stream a QueueEvents reads: its key and the partition it is of (0 for a plain queue). */
export interface EventsStream {
  key: string;
  partition: number;
}

/** What a reader hands its QueueEvents: each entry as read, and the failures worth telling. */
export interface EventsReaderOwner {
  /** True while the QueueEvents runs; the read loop ends once it is false. */
  running(): boolean;
  entry(stream: EventsStream, id: string, flat: string[]): void;
  /** A read failed: called once per outage (the first failure after a success), not at every retry. */
  readFailed(error: Error, what: string): void;
}

/** How long a reader waits before it sends a failed XREAD again. */
const RETRY_MS = 100;

/**
 * One connection of a QueueEvents and the events streams it reads with one XREAD BLOCK. A command's
 * keys must share a hash slot on Redis Cluster (XREAD BLOCK on streams of several slots is refused
 * with CROSSSLOT, even when one node holds them all), so a QueueEvents gives a reader every stream
 * on one server and one stream (one partition) each on a Cluster. Each reader keeps its own
 * position per stream, starts at each stream's end (start()), and reports its own outages.
 */
export class EventsReader {
  private lastIds: string[] = [];
  private readonly byKey: Map<string, EventsStream>;

  constructor(
    private readonly client: RedisClient,
    private readonly streams: readonly EventsStream[],
    private readonly blockingTimeout: number,
    /** What it reads, for error texts: `its events`, `the events of partition 3`. */
    private readonly what: string,
  ) {
    this.byKey = new Map(streams.map((stream) => [stream.key, stream]));
  }

  /**
   * Fixes where reading starts: after each stream's newest entry (from the start of a stream that
   * has none yet). All streams or none: a failure leaves the positions unset, and rejects.
   */
  async start(): Promise<void> {
    const newest = await Promise.all(this.streams.map((stream) =>
      this.client.xrevrange(stream.key, '+', '-', 'COUNT', 1) as Promise<Array<[string, string[]]>>));
    this.lastIds = newest.map((last) => last[0]?.[0] ?? '0-0');
  }

  /** Reads until the owner stops running; a failed read is retried after RETRY_MS. */
  async read(owner: EventsReaderOwner): Promise<void> {
    let failing = false;
    const keys = this.streams.map((stream) => stream.key);
    while (owner.running()) {
      let reply: Array<[string, Array<[string, string[]]>]> | null;
      try {
        reply = (await this.client.xread('BLOCK', this.blockingTimeout, 'STREAMS', ...keys, ...this.lastIds)) as typeof reply;
        failing = false;
      } catch (error) {
        if (!owner.running()) return;
        // Once per outage, not at every retry while Redis is away.
        if (!failing) owner.readFailed(asError(error), this.what);
        failing = true;
        await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
        continue;
      }
      for (const [key, entries] of reply ?? []) {
        const stream = this.byKey.get(key);
        if (!stream) continue;
        const position = this.streams.indexOf(stream);
        for (const [id, flat] of entries) {
          this.lastIds[position] = id;
          owner.entry(stream, id, flat);
        }
      }
    }
  }

  /** Drops the connection, not QUIT: its XREAD BLOCK would hold a QUIT until the block times out. */
  close(): void {
    dropClient(this.client);
  }
}
