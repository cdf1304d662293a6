import type { RedisClient } from '../../protocol/script.js';
import { closeClient, connect, connectBlocking, dropClient, type ConnectionInput } from '../core/connection.js';
import { PartitionWaker } from './partition-waker.js';

/**
 * A worker's connections: the shared one (its own unless the caller gave an instance, which it
 * never closes), and the ones it always owns: a plain queue's marker connection (BZPOPMIN), or a
 * partitioned queue's wake-channel subscriptions (its PartitionWaker).
 */
export class WorkerConnections {
  readonly client: RedisClient;
  /** A plain queue's marker connection; a partitioned queue's worker listens with a waker instead. */
  readonly blockingClient?: RedisClient;
  private readonly owned: boolean;
  private wakerOf?: PartitionWaker;

  constructor(private readonly input: ConnectionInput | undefined, partitions: number) {
    const { client, owned } = connect(input);
    this.client = client;
    this.owned = owned;
    if (partitions === 1) this.blockingClient = connectBlocking(input);
  }

  get waker(): PartitionWaker | undefined {
    return this.wakerOf;
  }

  /** A partitioned queue's worker: listens on each partition's wake channel. */
  listen(channels: string[], onWake: (partition: number) => void, onGap: () => void): void {
    this.wakerOf = new PartitionWaker(this.input, channels, onWake, onGap);
  }

  /** Resolves when every connection is ready: the shared one, and the marker's or the wake channels' subscriptions. */
  async ready(): Promise<void> {
    await Promise.all([this.client.ping(), this.blockingClient?.ping(), this.wakerOf?.start()]);
  }

  /** The orderly close: QUIT on the shared connection when it is the worker's own. */
  async close(): Promise<void> {
    if (this.owned) await closeClient(this.client);
    this.dropOwn();
  }

  /** Gives every connection it owns up at once, without a word to Redis. */
  drop(): void {
    if (this.owned) dropClient(this.client);
    this.dropOwn();
  }

  /** The connections a worker always owns: the marker's, or the wake channels'. */
  private dropOwn(): void {
    if (this.blockingClient) dropClient(this.blockingClient);
    this.wakerOf?.close();
  }
}
