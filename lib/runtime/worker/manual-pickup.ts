import { CANCEL_MARK_FIELD } from '../../protocol/cancels.js';
import { JobCancelledError } from '../core/job-cancelled-error.js';
import { UnrecoverableError } from '../core/unrecoverable-error.js';
import { Job } from '../job/job.js';
import type { JobSource } from './job-source.js';
import { fieldOf, flowLinkOf } from './pickup-fields.js';

/** Pickups one getNextJob makes at most while the jobs it takes end without running. */
const MOST_PICKUPS = 10;

/**
 * worker.getNextJob (a worker without a processor): the next job taken under `token`, after the
 * steps a worker's runner takes before a handler, so a job taken by hand is never one a worker
 * would not run: a job marked cancelled (queue.cancelJob) fails as cancelled, a parent a
 * failParentOnFailure child failed (`cfr`) fails with that reason, and a job scheduler's job takes
 * its scheduler's step (startSchedulerJob-14), skipped when a later slot's job stands for it.
 * Such a job is not handed out; the next one is taken. With `block`, the first pickup that finds
 * nothing waits up to drainDelay for work. Undefined when none came.
 */
export async function takeByHand<D, R>(source: JobSource, token: string, block: boolean): Promise<Job<D, R> | undefined> {
  let waited = !block;
  for (let pickups = 0; pickups < MOST_PICKUPS; pickups++) {
    const { lane, pickup } = await source.fetch(token);
    if (!pickup.job) {
      if (waited) return undefined;
      waited = true;
      await source.waitForWork();
      continue;
    }
    const { id, fields } = pickup.job;
    const job = Job.fromHash<D, R>(lane.context, id, fields);
    const mark = fieldOf(fields, CANCEL_MARK_FIELD);
    const childFailed = flowLinkOf(fields)?.childFailed;
    if (mark !== undefined) {
      await job.moveToFailed(new JobCancelledError(id, mark === '' ? undefined : mark), token);
      continue;
    }
    if (childFailed !== undefined) {
      await job.moveToFailed(new UnrecoverableError(childFailed), token);
      continue;
    }
    if (job.repeatJobKey !== undefined && (await lane.schedulers.start(id, token, fieldOf(fields, 'rpt'))) === 'skipped') continue;
    return job;
  }
  return undefined;
}
