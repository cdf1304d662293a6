import { EchoMQError } from './errors.js';
import { isErrorCode } from './codes.js';
import type { Script } from './script.js';
import type { AddedJob, Finish, LockFailure, MarkedCancel, Pickup } from './script-shapes.js';

// The parsers of the job scripts' replies: a reply as Redis sends it, turned into its shape.

/** An add script's answer for one job: outcome 1 added, 0 the custom id existed, 2 deduplicated. */
export function addedJob(jobId: string | number, outcome: number): AddedJob {
  const added: AddedJob = { jobId: String(jobId), created: outcome === 1 };
  if (outcome === 2) added.deduplicated = true;
  return added;
}

/** A batch finish's next job hash: the flat array as a JSON string (finishBatch.lua), or `{}` (no job). */
function fieldsOf(reply: string | number | string[]): string[] {
  return typeof reply === 'string' ? JSON.parse(reply) as string[] : reply as string[];
}

/**
 * A batch finish's reply (finishJobs-13, finishFlowJobs-15: a flat code, jobId, fields triple per
 * finish, then nextDelayedAt and rateLimitedFor): one Pickup or EchoMQError per finish, in order.
 */
export function batchPickups(reply: unknown, finishes: Finish[], script: Script): Array<Pickup | EchoMQError> {
  const [results, nextDelayedAt, rateLimitedFor] = reply as [Array<string | number | string[]>, number, number];
  const pickups = finishes.map((f, i) => {
    const code = results[3 * i] as number;
    if (isErrorCode(code)) return new EchoMQError(code, f.jobId, script.fileName);
    return parsePickup([results[3 * i + 1], fieldsOf(results[3 * i + 2]), nextDelayedAt, rateLimitedFor]);
  });
  emptyReply(reply as unknown[]);
  return pickups;
}

/**
 * Empties a reply array once what it carried was taken out of it. Measured, not guessed
 * (bench/profile-echomq.mjs --few-kb --promoted): a reply array left whole is kept alive past
 * its use from below us (ioredis alone, without EchoMQ, shows the same; the holder is not the
 * Command nor its promise), and with it every job's data it carried, which V8 then promotes to
 * the old generation for the major GC to collect: at concurrency 50 with 3.5 KB of data, 2.1 KB
 * promoted a job left whole, 0.3 KB emptied. The pickups keep their own fields arrays.
 */
function emptyReply(reply: unknown[]): void {
  reply.length = 0;
}

/** A pickup script's reply (moveToActive-11, moveToFinished-14) as a Pickup, the reply emptied. */
export function pickupOf(reply: unknown): Pickup {
  const pickup = parsePickup(reply);
  emptyReply(reply as unknown[]);
  return pickup;
}

export function parsePickup(reply: unknown): Pickup {
  const [jobId, fields, nextDelayedAt, rateLimitedFor, atBound] = reply as [string | number, string[], number, number, number?];
  const pickup: Pickup = {
    job: jobId === 0 ? undefined : { id: String(jobId), fields },
    nextDelayedAt: Number(nextDelayedAt),
    rateLimitedFor: Number(rateLimitedFor),
  };
  if (atBound === 1) pickup.atBound = true;
  return pickup;
}

/** Parses cancelledAmong-1's flat jobId, reason array. */
export function parseCancelled(reply: unknown): MarkedCancel[] {
  const flat = reply as Array<string | number>;
  const marked: MarkedCancel[] = [];
  for (let i = 0; i < flat.length; i += 2) {
    const reason = String(flat[i + 1]);
    marked.push(reason === '' ? { jobId: String(flat[i]) } : { jobId: String(flat[i]), reason });
  }
  return marked;
}

/** Parses extendLocks-1's flat failure array. */
export function parseLockFailures(reply: unknown): LockFailure[] {
  const flat = reply as Array<string | number>;
  const failures: LockFailure[] = [];
  for (let i = 0; i < flat.length; i += 2) failures.push({ jobId: String(flat[i]), code: Number(flat[i + 1]) as -2 | -6 });
  return failures;
}

export function pairsOf(flat: Array<string | number>): Array<{ jobId: string; stalledCount: number }> {
  const pairs: Array<{ jobId: string; stalledCount: number }> = [];
  for (let i = 0; i < flat.length; i += 2) pairs.push({ jobId: String(flat[i]), stalledCount: Number(flat[i + 1]) });
  return pairs;
}
