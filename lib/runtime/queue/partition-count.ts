import { EchoMQOptionError } from '../../protocol/errors.js';
import type { Keys } from '../../protocol/keys.js';
import type { RedisClient } from '../../protocol/script.js';

/**
 * A partitioned queue's count, kept in Redis: the first client of the queue writes it into
 * partition 0's meta hash (`partitions`, HSETNX), every later one compares. A Queue or Worker given
 * another count would miss partitions (jobs stranded there) or make new ones: it is refused with
 * an EchoMQOptionError instead. Obliterate removes the record with the meta hash.
 */
export async function partitionCountError(client: RedisClient, first: Keys, queueName: string, partitions: number, who: string): Promise<EchoMQOptionError | undefined> {
  const replies = (await client.pipeline().hsetnx(first.meta, 'partitions', partitions).hget(first.meta, 'partitions').exec()) ?? [];
  for (const [error] of replies) if (error) throw error;
  const stored = Number(replies[1]?.[1]);
  if (stored === partitions) return undefined;
  return new EchoMQOptionError('partitions', `${who} of queue ${queueName} was given ${partitions}, but the queue has ${stored} partitions in Redis (recorded by its first client); give every Queue, Worker and QueueEvents the same count, or obliterate the queue to change it`);
}
