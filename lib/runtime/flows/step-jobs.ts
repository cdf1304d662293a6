import type { ParentOptions } from '../core/job-options.js';
import { EchoMQError, EchoMQOptionError } from '../../protocol/errors.js';
import { FlowScripts, type FlowJobRecord } from '../../protocol/flow-scripts.js';
import { Keys } from '../../protocol/keys.js';
import { describe } from '../../protocol/names.js';
import type { JobContext, JobRun, WaitingChildrenOptions } from '../job/job-context.js';
import { canNameJob } from '../job/job.js';
import { MAX_CHILDREN } from './flow-tree.js';
import { ParentNotices, parseJobKey } from './parent-notices.js';
import { isUnrecoverableError, UnrecoverableError } from '../core/unrecoverable-error.js';
import { markRunningParent } from './running-parents.js';

/** A parent option checked: its queue's Keys and its id. */
export interface CheckedParent {
  keys: Keys;
  id: string;
}

/**
 * Checks a job named by `{ id, queue }` (`opts.parent` of an add, `opts.child` of
 * moveToWaitingChildren) before anything is written; an EchoMQOptionError names the field, e.g.
 * `add: opts.parent.id`.
 */
export function checkJobRef(ref: unknown, field: string): CheckedParent {
  if (typeof ref !== 'object' || ref === null || Array.isArray(ref)) {
    throw new EchoMQOptionError(field, `must be { id, queue } (queue: the job's job.queueQualifiedName, "emq:{name}"), got ${describe(ref)}`);
  }
  const { id, queue } = ref as Partial<ParentOptions>;
  if (!canNameJob(id)) throw new EchoMQOptionError(`${field}.id`, `must be the id of a job, got ${describe(id)}`);
  const parsed = typeof queue === 'string' ? parseJobKey(`${queue}:${id}`) : undefined;
  if (!parsed || parsed.keys.queueKey !== queue) {
    throw new EchoMQOptionError(`${field}.queue`, `must be the queue's key, "<prefix>:{<name>}" (job.queueQualifiedName), got ${describe(queue)}`);
  }
  return parsed;
}

/** What addChild needs of the add: the child's record (its id given) and the queue it goes to. */
export interface ChildAdd {
  queueName: string;
  prefix: string;
  keys: Keys;
  flows: FlowScripts;
  record: FlowJobRecord;
}

/**
 * Adds a child to a parent that may be running (a step job), in an order that never leaves the
 * parent waiting for nothing: first the dependency and the child's spec in the parent's slot
 * (addDependency-4; the parent cannot start or leave waiting-children without this child now),
 * then the child in its own slot (addFlowJobs-15), then the parent's intent is cleared
 * (ackFlowPending-2). A caller that dies half-way leaves the intent, which a sweep can roll
 * forward as it does a FlowProducer's. Answers 'added' or 'existed' (this child was added before,
 * by an earlier try). Throws EchoMQError -1 (no parent) and EchoMQOptionError (the parent is
 * full, or the id is another job's); then the dependency is undone.
 */
export async function addChild(child: ChildAdd, parent: CheckedParent, parentFlows: FlowScripts, at: string): Promise<'added' | 'existed'> {
  const childKey = child.keys.job(child.record.id);
  const spec = JSON.stringify({ queueName: child.queueName, prefix: child.prefix, record: child.record });
  const recorded = await parentFlows.addDependency(parent.id, childKey, spec, MAX_CHILDREN, Date.now());
  if (recorded === 'missing') throw new EchoMQError(-1, parent.id, 'addDependency-4.lua', `the parent named by ${at}opts.parent does not exist in ${parent.keys.queueKey}`);
  // A parent this process runs now finishes as a parent (its flow keys, a failed child's mark).
  if (recorded === 'recorded') markRunningParent(parent.keys.job(parent.id));
  if (recorded === 'full') throw new EchoMQOptionError(`${at}opts.parent`, `names job ${parent.id}, which has ${MAX_CHILDREN} unsettled children already (the most one parent takes)`);
  const [code] = await child.flows.addFlowJobs([child.record], Date.now());
  if (code === 'taken') {
    // Not this parent's child: the dependency just recorded goes again (a settle that drops it).
    await parentFlows.settleChildren([{ parentId: parent.id, childKey, outcome: 'failed', value: 'not added', policy: 'remove' }], Date.now());
    await parentFlows.ackPending(parent.id, [childKey]);
    throw new EchoMQOptionError(`${at}opts.jobId`, `is ${child.record.id}: queue ${child.queueName} holds a job of that id that is not this parent's child`);
  }
  await parentFlows.ackPending(parent.id, [childKey]);
  if (code === 'finished') {
    // Added before and finished since: its notice was written again, for this parent to hear now.
    await new ParentNotices(child.flows.client, child.keys, child.flows.maxEvents, () => undefined, 0).deliverStored([child.record.id]);
    return 'existed';
  }
  return code;
}

/** job.moveToWaitingChildren: see Job. */
export async function moveJobToWaitingChildren(job: JobRun, context: JobContext, token: unknown, opts: WaitingChildrenOptions): Promise<boolean> {
  if (typeof token !== 'string' || token.length === 0) {
    throw new EchoMQOptionError('token', `must be the lock token the handler was given ({ token } of its second argument), got ${describe(token)}`);
  }
  if (typeof opts !== 'object' || opts === null) throw new EchoMQOptionError('opts', `must be { child? }, got ${describe(opts)}`);
  let childKey = '';
  if (opts.child !== undefined) {
    const child = checkJobRef(opts.child, 'opts.child');
    childKey = child.keys.job(child.id);
  }
  const flows = context.flows ?? new FlowScripts(context.client, context.keys, context.maxEvents ?? 10_000);
  // Looked up only now: a job that never waits costs its worker nothing per run.
  const ours = context.ownRun?.(job.id, token);
  ours?.becameParent();
  ours?.leaving();
  let moved: boolean;
  try {
    const answer = await flows.moveToWaitingChildren(job.id, token, childKey, Date.now());
    if (answer.childFailed !== undefined) {
      // A child with failParentOnFailure failed while this job ran: it fails now, for good.
      ours?.stayed();
      throw new UnrecoverableError(answer.childFailed);
    }
    moved = answer.moved;
  } catch (error) {
    if (isUnrecoverableError(error)) throw error;
    if (!(error instanceof EchoMQError && error.code === -2 && (await landedEarlier(job, context)))) {
      ours?.stayed();
      throw error;
    }
    moved = true;
  }
  if (moved) ours?.left('waiting-children');
  else ours?.stayed();
  return moved;
}

/**
 * A -2 may be this very call answered a second time (its reply lost, ioredis sent it again after
 * the first had released the lock): it landed if the job waits for its children and no pickup
 * came since (`ats` unchanged).
 */
async function landedEarlier(job: JobRun, context: JobContext): Promise<boolean> {
  try {
    const [score, ats] = await Promise.all([context.client.zscore(context.keys.waitingChildren, job.id), context.client.hget(context.keys.job(job.id), 'ats')]);
    return score !== null && Number(ats ?? 0) === job.attemptsStarted;
  } catch {
    return false;
  }
}
