import type { Keys } from '../../protocol/keys.js';
import type { RedisClient } from '../../protocol/script.js';
import { fromJson } from '../core/serialize.js';

/** A parent's children by state (BullMQ's getDependencies): keys are the children's job keys. */
export interface Dependencies {
  /** Completed children: their return values. */
  processed: Record<string, unknown>;
  /** Children not finished yet (failed ones are under `failed`). */
  unprocessed: string[];
  /** Children that failed for good with no policy (the parent waits for them), or with fail or continue. */
  failed: string[];
  /** Children that failed with ignoreDependencyOnFailure: their failedReason. */
  ignored: Record<string, string>;
}

export interface DependenciesCount {
  processed: number;
  unprocessed: number;
  failed: number;
  ignored: number;
}

/** A parent's completed children's return values, by child job key (BullMQ's getChildrenValues). */
export async function childrenValues(client: RedisClient, keys: Keys, jobId: string): Promise<Record<string, unknown>> {
  return parseValues(await client.hgetall(keys.flow(jobId, 'processed')));
}

/** Reads a parent's four flow keys in one round trip. */
export async function dependencies(client: RedisClient, keys: Keys, jobId: string): Promise<Dependencies> {
  const replies = (await client.pipeline()
    .hgetall(keys.flow(jobId, 'processed'))
    .smembers(keys.flow(jobId, 'dependencies'))
    .hkeys(keys.flow(jobId, 'unsuccessful'))
    .hgetall(keys.flow(jobId, 'ignored'))
    .exec()) ?? [];
  const [processed, open, failed, ignored] = replies.map(([error, reply]) => {
    if (error) throw error;
    return reply;
  }) as [Record<string, string>, string[], string[], Record<string, string>];
  const failedSet = new Set(failed);
  return { processed: parseValues(processed), unprocessed: open.filter((key) => !failedSet.has(key)), failed, ignored };
}

export async function dependenciesCount(client: RedisClient, keys: Keys, jobId: string): Promise<DependenciesCount> {
  const replies = (await client.pipeline()
    .hlen(keys.flow(jobId, 'processed'))
    .smembers(keys.flow(jobId, 'dependencies'))
    .hkeys(keys.flow(jobId, 'unsuccessful'))
    .hlen(keys.flow(jobId, 'ignored'))
    .exec()) ?? [];
  const [processed, open, failed, ignored] = replies.map(([error, reply]) => {
    if (error) throw error;
    return reply;
  }) as [number, string[], string[], number];
  const failedSet = new Set(failed);
  return { processed, unprocessed: open.filter((key) => !failedSet.has(key)).length, failed: failed.length, ignored };
}

function parseValues(hash: Record<string, string>): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  for (const [key, json] of Object.entries(hash)) values[key] = fromJson(json);
  return values;
}
