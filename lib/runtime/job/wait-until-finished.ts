import { filter, firstValueFrom, timeout as rxTimeout } from 'rxjs';
import { EchoMQOptionError } from '../../protocol/errors.js';
import { JobNotFoundError } from './job-errors.js';
import type { JobContext } from './job-context.js';
import type { QueueEvent, QueueEvents } from '../events/queue-events.js';
import { fromJson } from '../core/serialize.js';

/** How many of the newest stream entries are searched for the end of a job whose hash is gone. */
export const FINISH_EVENT_SCAN = 1000;

type Outcome =
  | { kind: 'completed'; value?: string }
  | { kind: 'failed'; reason: string }
  | { kind: 'removed' };

/**
 * Resolves with a job's returnvalue once it completes, or rejects with its failedReason once it
 * fails for good. It listens first and reads the job hash second, so a job that finishes in
 * between is seen either way. A job whose hash is gone (removeOnComplete, removeOnFail) settles
 * with its completed or failed event from the stream, the scripts having written it in the same
 * call that removed the hash; a job removed without finishing, or whose end is no longer among the
 * newest FINISH_EVENT_SCAN events, rejects with JobNotFoundError. It never waits for a job that
 * cannot finish any more.
 */
export async function waitUntilFinished<Result>(
  queueEvents: QueueEvents,
  context: JobContext,
  jobId: string,
  timeoutMs?: number,
): Promise<Result> {
  const partition = streamOfJob(queueEvents, context, jobId);
  await queueEvents.waitUntilReady();
  let ended$ = queueEvents.events$.pipe(
    filter((entry) => entry.jobId === jobId && (entry.partition ?? 0) === partition
      && (entry.event === 'completed' || entry.event === 'failed' || entry.event === 'removed')),
  );
  if (timeoutMs !== undefined) ended$ = ended$.pipe(rxTimeout(timeoutMs));
  const fromEvents = firstValueFrom(ended$).then(toOutcome);
  fromEvents.catch(() => undefined);

  const [name, finishedOn, returnvalue, failedReason] = await context.client.hmget(context.keys.job(jobId), 'name', 'finishedOn', 'returnvalue', 'failedReason');
  let outcome: Outcome;
  if (name === null) {
    outcome = (await endFromStream(context, jobId))
      ?? gone(context, jobId, `its hash is gone and the newest ${FINISH_EVENT_SCAN} events hold no completed or failed event of it`);
  } else if (finishedOn) {
    outcome = failedReason && returnvalue === null
      ? { kind: 'failed', reason: failedReason }
      : { kind: 'completed', value: returnvalue ?? undefined };
  } else {
    try {
      outcome = await fromEvents;
    } catch (error) {
      throw new Error(`job ${jobId} of queue ${context.queueName} did not finish within ${timeoutMs} ms`, { cause: error });
    }
  }
  if (outcome.kind === 'removed') gone(context, jobId, 'it was removed before it finished');
  if (outcome.kind === 'failed') throw new Error(outcome.reason);
  return fromJson<Result>(outcome.value) as Result;
}

/**
 * The partition of `queueEvents` whose stream holds the job's events (0 for a plain queue), found
 * by the job's events key. A QueueEvents that does not read that stream (another queue, the plain
 * queue of the same name, a partition count too small to include the job's) is refused: it would
 * wait forever. Matching the partition as well as the id keeps apart two jobs of one custom id in
 * two partitions.
 */
function streamOfJob(queueEvents: QueueEvents, context: JobContext, jobId: string): number {
  const streams = queueEvents.partitionKeys.map((keys) => keys.events);
  const partition = streams.indexOf(context.keys.events);
  if (partition < 0) {
    const reads = streams.length === 1 ? streams[0] : `${streams.length} partitions' streams (${streams[0]} ... ${streams.at(-1)})`;
    throw new EchoMQOptionError('queueEvents', `reads the events of ${reads}, not those of job ${jobId}'s queue (${context.keys.events}); it would wait forever`);
  }
  return partition;
}

function toOutcome(entry: QueueEvent): Outcome {
  if (entry.event === 'completed') return { kind: 'completed', value: entry.fields.returnvalue };
  if (entry.event === 'failed') return { kind: 'failed', reason: entry.fields.failedReason ?? '' };
  return { kind: 'removed' };
}

/** The job's newest completed or failed event among the newest entries of the stream, if any. */
async function endFromStream(context: JobContext, jobId: string): Promise<Outcome | undefined> {
  const entries = (await context.client.xrevrange(context.keys.events, '+', '-', 'COUNT', FINISH_EVENT_SCAN)) as Array<[string, string[]]>;
  for (const [, flat] of entries) {
    const fields: Record<string, string> = {};
    for (let i = 0; i < flat.length; i += 2) fields[flat[i]] = flat[i + 1];
    if (fields.jobId !== jobId) continue;
    if (fields.event === 'completed') return { kind: 'completed', value: fields.returnvalue };
    if (fields.event === 'failed') return { kind: 'failed', reason: fields.failedReason ?? '' };
  }
  return undefined;
}

function gone(context: JobContext, jobId: string, detail: string): never {
  throw new JobNotFoundError(context.queueName, jobId, detail);
}
