import type { Keys } from '../../protocol/keys.js';
import type { RedisClient } from '../../protocol/script.js';
import { CallBatcher } from '../core/call-batcher.js';

/** A job found in active under a lock token this worker chose: it is this worker's to run. */
export interface HandedOverJob {
  id: string;
  fields: Record<string, string>;
}

/** Lock values read per MGET: a long active list is read in steps, never in one command. */
const LOCKS_PER_READ = 1000;

/**
 * HandoverRecovery: takes back the jobs that a lost fetch-next reply handed over.
 *
 * A finish with fetch-next (moveToFinished-14, finishJobs-13) takes the next job into active and
 * sets its lock to a token the worker chose before sending. When the reply is lost (the connection
 * dropped and the call was sent again, or the worker sent it again itself), the finish answers
 * "already done" and the worker never learns which jobs it was handed: they sit in active under
 * its tokens, renewed by nobody, until their locks lapse and a sweep counts a stall against each.
 *
 * The lock is the truth of ownership, so the jobs are found by it: every id in active whose lock
 * holds one of the tokens. This costs nothing while replies arrive (no extra write per finish);
 * after a lost reply it costs one LRANGE of active and an MGET per 1,000 of its ids, for all the
 * tokens of one event-loop turn together (the finishes of a lost batch are judged in one turn).
 */
export class HandoverRecovery {
  private readonly batcher: CallBatcher<string, HandedOverJob | undefined>;

  constructor(client: RedisClient, keys: Keys) {
    this.batcher = new CallBatcher(
      (tokens) => findByLockTokens(client, keys, tokens),
      Number.MAX_SAFE_INTEGER,
      () => false,
    );
  }

  /** The job whose lock holds `token` now, if one does. */
  reclaim(token: string): Promise<HandedOverJob | undefined> {
    return this.batcher.submit(token);
  }
}

/** For each token, the job in active whose lock holds it (undefined where none does). */
export async function findByLockTokens(client: RedisClient, keys: Keys, tokens: string[]): Promise<Array<HandedOverJob | undefined>> {
  const found = await scanActiveLocks(client, keys, new Set(tokens));
  const jobByToken = new Map(found.map(({ token, job }) => [token, job]));
  return tokens.map((token) => jobByToken.get(token));
}

/**
 * Every job in active whose lock holds `token`. A pickup (moveToActive-11) sent twice, because its
 * reply was lost and ioredis sent it again after reconnecting, took a job at each send under the
 * one token; the worker heard only of the second.
 */
export async function findAllByLockToken(client: RedisClient, keys: Keys, token: string): Promise<HandedOverJob[]> {
  return (await scanActiveLocks(client, keys, new Set([token]))).map(({ job }) => job);
}

/** The jobs in active whose lock holds one of `tokens`, with their hashes. */
async function scanActiveLocks(client: RedisClient, keys: Keys, tokens: Set<string>): Promise<Array<{ token: string; job: HandedOverJob }>> {
  const held: Array<[token: string, id: string]> = [];
  const active = await client.lrange(keys.active, 0, -1);
  for (let i = 0; i < active.length; i += LOCKS_PER_READ) {
    const ids = active.slice(i, i + LOCKS_PER_READ);
    const holders = await client.mget(...ids.map((id) => keys.lock(id)));
    holders.forEach((holder, j) => {
      if (holder !== null && tokens.has(holder)) held.push([holder, ids[j]]);
    });
  }
  if (held.length === 0) return [];
  const pipeline = client.pipeline();
  for (const [, id] of held) pipeline.hgetall(keys.job(id));
  const hashes = (await pipeline.exec()) ?? [];
  const found: Array<{ token: string; job: HandedOverJob }> = [];
  held.forEach(([token, id], i) => {
    const [error, fields] = hashes[i] as [Error | null, Record<string, string>];
    if (!error && Object.keys(fields).length > 0) found.push({ token, job: { id, fields } });
  });
  return found;
}
