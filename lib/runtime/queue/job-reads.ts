import { EchoMQOptionError } from '../../protocol/errors.js';
import { describe } from '../../protocol/names.js';
import type { RedisClient } from '../../protocol/script.js';
import { Job } from '../job/job.js';
import type { QueuePart } from '../job/queue-part.js';

// Reading jobs by id from one part of a queue: one pipelined HGETALL per call.

/** The jobs of these ids that still exist, in the same order. */
export async function presentJobs<Data, Result>(client: RedisClient, part: QueuePart, ids: string[]): Promise<Array<Job<Data, Result>>> {
  const jobs = await readJobs<Data, Result>(client, part, ids);
  return jobs.filter((job): job is Job<Data, Result> => job !== undefined);
}

/** The jobs of these ids, in the same order; undefined where there is none. */
export async function readJobs<Data, Result>(client: RedisClient, part: QueuePart, ids: string[]): Promise<Array<Job<Data, Result> | undefined>> {
  if (ids.length === 0) return [];
  const pipeline = client.pipeline();
  for (const id of ids) pipeline.hgetall(part.keys.job(id));
  const replies = (await pipeline.exec()) ?? [];
  return replies.map(([error, hash], i) => {
    if (error) throw error;
    const fields = hash as Record<string, string>;
    return Object.keys(fields).length === 0 ? undefined : Job.fromHash<Data, Result>(part.context, ids[i], fields);
  });
}

/** A getJobs bound: a whole number, negative counting from the end as in LRANGE. */
export function assertIndex(value: unknown, field: string): void {
  if (!Number.isInteger(value)) throw new EchoMQOptionError(field, `must be a whole number, got ${describe(value)}`);
}
