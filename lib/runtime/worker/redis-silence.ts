import type { RedisClient } from '../../protocol/script.js';
import type { Sleeper } from '../core/sleeper.js';

/** How often a closing worker asks Redis whether it still answers: at most every 500 ms, and four times per bound. */
const PROBE_MS = 500;

/**
 * Resolves true once `client` has answered no PING for `ms`, probing every PROBE_MS (or ms / 4); false when
 * `stop` is woken first (the close ended in time). This is what a worker's closeTimeout counts:
 * time Redis is silent, not time a job runs, so a graceful close waits for a long job as BullMQ's
 * does, and a stopped or unreachable Redis (a SIGSTOPped server keeps its socket open and never
 * replies) still cannot hold the close for more than `ms`.
 */
export async function redisSilentFor(client: RedisClient, ms: number, stop: Sleeper, stopped: () => boolean): Promise<boolean> {
  let lastAnswer = Date.now();
  const every = Math.min(PROBE_MS, ms / 4);
  while (!stopped()) {
    const silentFor = Date.now() - lastAnswer;
    if (silentFor >= ms) return true;
    // Unanswered probes wait in ioredis's queue; at most ms / every of them, answered or
    // dropped with the connection.
    client.ping().then(() => (lastAnswer = Date.now()), () => undefined);
    await stop.sleep(Math.min(every, ms - silentFor));
  }
  return false;
}
