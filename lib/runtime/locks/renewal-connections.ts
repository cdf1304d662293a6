import type { RedisClient } from '../../protocol/script.js';
import { connectRenewal, dropClient } from '../core/connection.js';

/** One worker's way to its renewal connection. */
export interface RenewalLease {
  /** The connection its heartbeat ticks go on (made at the first tick of any worker sharing it). */
  client(): RedisClient;
  /** The worker left; the connection is dropped when its last worker leaves. */
  leave(): void;
}

/**
 * The LockManager's heartbeat connections: one per source connection (the workers' shared one),
 * shared by every worker of the LockManager on that source, and made only when a tick first needs
 * it. In a Nest app every queue and worker of a configuration shares one connection, so a renewal
 * sent there would wait behind a 50,000-job addBulk pipeline or a batch of finishes; on its own
 * connection it waits behind nothing but other renewals.
 */
export class RenewalConnections {
  private readonly bySource = new Map<RedisClient, { users: number; client?: RedisClient }>();

  /** A worker whose scripts use `source` joins. */
  join(source: RedisClient): RenewalLease {
    let entry = this.bySource.get(source);
    if (!entry) this.bySource.set(source, (entry = { users: 0 }));
    const joined = entry;
    joined.users++;
    let left = false;
    return {
      client: () => (joined.client ??= connectRenewal(source)),
      leave: () => {
        if (left) return;
        left = true;
        if (--joined.users > 0) return;
        this.bySource.delete(source);
        // Its workers have stopped their timers (or given their locks up): no renewal it carries is awaited.
        if (joined.client) dropClient(joined.client);
      },
    };
  }

  /** How many renewal connections are open now. */
  get openCount(): number {
    let open = 0;
    for (const entry of this.bySource.values()) if (entry.client && entry.client.status !== 'end') open++;
    return open;
  }

  /** Drops every renewal connection (the LockManager closed). */
  closeAll(): void {
    for (const entry of this.bySource.values()) if (entry.client) dropClient(entry.client);
    this.bySource.clear();
  }
}
