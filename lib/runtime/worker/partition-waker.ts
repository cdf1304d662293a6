import { Cluster } from 'ioredis';
import type { RedisClient } from '../../protocol/script.js';
import { connectSubscriber, dropClient, type ConnectionInput } from '../core/connection.js';

/**
 * How a worker of a partitioned queue learns that a partition has work: it listens on every
 * partition's wake channel (`P:{Q#i}:wake`, sharded pub/sub, Redis 7.0 or later), where adds,
 * resumes, retries and stalled sweeps publish. A blocking BZPOPMIN cannot wait on several
 * partitions at once (their markers are in different slots), and one blocking connection per
 * partition would not scale; sharded pub/sub lets one connection per node carry every partition
 * that node holds (on a Cluster, ioredis's `shardedSubscribers`; on one server, one connection).
 *
 * A message can be missed (published while the connection was down): `onGap` then says "look
 * everywhere", and the fetcher looks at every partition every drainDelay anyway.
 */
export class PartitionWaker {
  private readonly subscriber: RedisClient;
  private readonly indexOf = new Map<string, number>();
  private subscribed?: Promise<void>;
  private connectedOnce = false;

  constructor(
    connection: ConnectionInput | undefined,
    private readonly channels: string[],
    private readonly onWake: (partition: number) => void,
    private readonly onGap: () => void,
  ) {
    channels.forEach((channel, i) => this.indexOf.set(channel, i));
    this.subscriber = connectSubscriber(connection);
    this.subscriber.on('smessage', (channel: string) => {
      const index = this.indexOf.get(channel);
      if (index !== undefined) this.onWake(index);
    });
    this.subscriber.on('ready', () => {
      if (this.connectedOnce) this.onGap();
      this.connectedOnce = true;
    });
  }

  /** Subscribes to every wake channel once; rejects when it could not (it can be called again). */
  start(): Promise<void> {
    // A failed try is forgotten, so the next start() tries again.
    this.subscribed ??= this.subscribe().catch((error: unknown) => {
      this.subscribed = undefined;
      throw error;
    });
    return this.subscribed;
  }

  close(): void {
    dropClient(this.subscriber);
  }

  private async subscribe(): Promise<void> {
    try {
      // A Cluster takes one slot per SSUBSCRIBE; one server takes them all at once.
      if (this.subscriber instanceof Cluster) await Promise.all(this.channels.map((channel) => this.subscriber.ssubscribe(channel)));
      else await this.subscriber.ssubscribe(...this.channels);
    } catch (error) {
      const message = (error as Error).message;
      if (/unknown command/i.test(message)) {
        throw new Error(`a partitioned queue needs Redis 7.0 or later (sharded pub/sub, SSUBSCRIBE): ${message}`);
      }
      throw error;
    }
  }
}
