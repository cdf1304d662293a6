import { filter, firstValueFrom, timeout as rxTimeout } from 'rxjs';
import type { JobContext } from './job.js';
import type { QueueEvents } from './queue-events.js';
import { fromJson } from './serialize.js';

/**
 * Resolves with a job's returnvalue once it completes, or rejects with its failedReason once it
 * fails for good. It listens first and reads the job hash second, so a job that finishes in
 * between is seen either way.
 */
export async function waitUntilFinished<Result>(
  queueEvents: QueueEvents,
  context: JobContext,
  jobId: string,
  timeoutMs?: number,
): Promise<Result> {
  await queueEvents.waitUntilReady();
  let finished$ = queueEvents.events$.pipe(
    filter((entry) => entry.jobId === jobId && (entry.event === 'completed' || entry.event === 'failed')),
  );
  if (timeoutMs !== undefined) finished$ = finished$.pipe(rxTimeout(timeoutMs));
  const fromEvents = firstValueFrom(finished$).then((entry) =>
    entry.event === 'completed'
      ? { completed: true, value: entry.fields.returnvalue, reason: '' }
      : { completed: false, value: '', reason: entry.fields.failedReason ?? '' },
  );
  fromEvents.catch(() => undefined);

  const [finishedOn, returnvalue, failedReason] = await context.client.hmget(context.keys.job(jobId), 'finishedOn', 'returnvalue', 'failedReason');
  let outcome: { completed: boolean; value?: string; reason: string };
  if (finishedOn) {
    outcome = failedReason && returnvalue === null
      ? { completed: false, reason: failedReason }
      : { completed: true, value: returnvalue ?? undefined, reason: '' };
  } else {
    try {
      outcome = await fromEvents;
    } catch (error) {
      throw new Error(`job ${jobId} of queue ${context.queueName} did not finish within ${timeoutMs} ms`, { cause: error });
    }
  }
  if (!outcome.completed) throw new Error(outcome.reason);
  return fromJson<Result>(outcome.value) as Result;
}
