import type { Keys } from '../../protocol/keys.js';
import type { RedisClient } from '../../protocol/script.js';

/**
 * Tells the workers of a partitioned queue that this partition may have work: SPUBLISH on its wake
 * channel (docs/protocol.md, "Partitioned queues"). Sent after the call that made the work has
 * answered. Lost or failed, a wake-up only delays a worker until its next look at every partition
 * (drainDelay), so a failure is not reported.
 */
export function publishWake(client: RedisClient, keys: Keys): void {
  void client.spublish(keys.wake, '').catch(() => undefined);
}
