/**
 * Job preparation: what add() and addBulk() do to each job before anything is sent to Redis. The
 * job's name, options and parent options are checked (EchoMQOptionError, naming the entry: `add`,
 * `addBulk[2]`), the options are merged with the queue's defaults, and the job is turned into what
 * the add scripts take (NewJob). It reads nothing of the Queue but its name, its partition count
 * and its resolved options, which it is given, and it touches no Redis: it is kept apart from
 * queue.ts so that the checks of an add can be read in one place, apart from the sending.
 */
import { EchoMQOptionError } from '../../protocol/errors.js';
import { describe } from '../../protocol/names.js';
import { assertCustomIdForPartitions } from '../../protocol/partitions.js';
import type { NewJob } from '../../protocol/script-shapes.js';
import { dataLimitOf, validateJobOptions, type JobOptions } from '../core/job-options.js';
import type { ResolvedQueueOptions } from '../core/queue-options.js';
import { POLICIES } from '../flows/flow-tree.js';
import { checkJobRef, type CheckedParent } from '../flows/step-jobs.js';
import { withTraceContext } from '../core/telemetry.js';
import { toJson } from '../core/serialize.js';

/** A job as add() checked it: what the add scripts take, the options it was given merged with the defaults, its data. */
export interface Prepared {
  job: NewJob;
  opts: JobOptions;
  data: unknown;
  /** Its parent, when added with `parent` (a child; docs/flows.md, "Step jobs"). */
  parent?: CheckedParent;
  /** Where a message about it says it came from (`add`, `addBulk[2]`). */
  at: string;
}

/** What job preparation reads of the queue it adds to: built once per Queue. */
export interface AddTarget {
  readonly queueName: string;
  readonly partitions: number;
  readonly options: Pick<ResolvedQueueOptions, 'defaultJobOptions' | 'maxDataSize'>;
}

/**
 * One job of an add to `target`, checked and ready to send. `metadata`: the trace context of the
 * add's span, when the queue has `telemetry`.
 */
export function prepareJob(target: AddTarget, name: unknown, data: unknown, opts: JobOptions, at: string, metadata?: string): Prepared {
  const { partitions, options } = target;
  if (typeof name !== 'string' || name.length === 0) throw new EchoMQOptionError(`${at}: job name`, `must be a non-empty string, got ${describe(name)}`);
  validateJobOptions(opts, `${at}: opts.`);
  const parent = checkParentOptions(target, opts, at);
  const merged: JobOptions = { ...options.defaultJobOptions, ...opts };
  // After the merge: an omitContext among the queue's defaults counts too.
  if (metadata) merged.telemetry = withTraceContext(merged.telemetry, metadata);
  const { jobId, ...stored } = merged;
  if (jobId !== undefined) assertCustomIdForPartitions(jobId, partitions, `${at}: opts.jobId`);
  const job: NewJob = {
    customId: jobId,
    name,
    data: toJson(data, `${at}: data`, dataLimitOf(merged, options.maxDataSize)),
    opts: JSON.stringify(stored),
    timestamp: Date.now(),
    delay: merged.delay ?? 0,
    priority: merged.priority ?? 0,
    lifo: merged.lifo === true,
  };
  const dedup = merged.deduplication;
  if (dedup) job.deduplication = { id: dedup.id, ttl: dedup.ttl ?? 0, extend: dedup.extend === true, replace: dedup.replace === true };
  return { job, opts: merged, data: data === undefined ? {} : data, parent, at };
}

/** `opts.parent` and the failure options that go with it, checked before anything is written. */
function checkParentOptions({ queueName, partitions }: AddTarget, opts: JobOptions, at: string): CheckedParent | undefined {
  const policies = POLICIES.filter(([name]) => {
    const value = opts[name];
    if (value !== undefined && typeof value !== 'boolean') throw new EchoMQOptionError(`${at}: opts.${name}`, `must be true or false, got ${describe(value)}`);
    return value === true;
  });
  if (opts.parent === undefined) {
    if (policies.length > 0) throw new EchoMQOptionError(`${at}: opts.${policies[0][0]}`, 'applies to a child; this job has no parent (opts.parent)');
    return undefined;
  }
  if (policies.length > 1) throw new EchoMQOptionError(`${at}: opts`, `sets ${policies.map(([n]) => n).join(' and ')}: a child has one policy on failure`);
  if (partitions > 1) throw new EchoMQOptionError(`${at}: opts.parent`, `is not supported on a partitioned queue (${queueName} has ${partitions} partitions)`);
  if (opts.deduplication !== undefined) throw new EchoMQOptionError(`${at}: opts.deduplication`, 'is not supported with a parent: a child is added once, by its id');
  return checkJobRef(opts.parent, `${at}: opts.parent`);
}
