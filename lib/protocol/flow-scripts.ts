import { isErrorCode } from './codes.js';
import { EchoMQError } from './errors.js';
import type { Keys } from './keys.js';
import type { RedisClient } from './script.js';
import type { ScriptArg } from './script-command.js';
import { SCRIPTS } from './script-registry.js';
import type { Finish, NewJob } from './script-shapes.js';

/** What a child asks of its parent when it fails for good (docs/flows.md): '' is BullMQ's default, the parent waits. */
export type ParentPolicy = '' | 'fail' | 'ignore' | 'remove' | 'continue';

/**
 * A child's creation spec, kept in its parent's intent until the producer made it: everything
 * addFlowJobs-15 needs to make it again, its own children's specs nested as objects (serialized
 * once, at the call: a string per level would escape the escapes, 4x a level).
 */
export interface FlowSpec {
  queueName: string;
  prefix: string;
  record: FlowJobRecord;
}

/** One job as addFlowJobs-15 takes it: its id is always given (the producer makes one). */
export interface FlowJobRecord extends Omit<NewJob, 'customId' | 'deduplication'> {
  id: string;
  /** The parent's job key, its `{ id, queueKey }` JSON and the policy; all '' for a root. */
  parentKey: string;
  parentJson: string;
  policy: ParentPolicy;
  /** Its children: job key and creation spec each. */
  children: Array<{ key: string; spec: FlowSpec }>;
}

/**
 * addFlowJobs-15's answer for one job: added; existed with the same parent link (left as it is);
 * finished, the same but it had finished, so its notice was written again (deliver it); taken,
 * it exists as another job.
 */
export type FlowAddCode = 'added' | 'existed' | 'finished' | 'taken';

const ADD_CODES: Record<number, FlowAddCode> = { 0: 'existed', 1: 'added', 2: 'taken', 3: 'finished' };

/** A finished child's news for its parent: what finishFlowJob-8 left as a notice, and settleChildren-12 takes. */
export interface ChildOutcome {
  parentId: string;
  childKey: string;
  outcome: 'completed' | 'failed';
  /** The returnvalue JSON when completed, the failedReason when failed. */
  value: string;
  policy: ParentPolicy;
}

/**
 * What ackNotices-2 deletes: a notice as delivered, built by the runtime (its fields), or data as
 * it was read from notice-data (`stored`, its exact bytes: a notice delivered, or data reported as
 * none).
 */
export type NoticeAck =
  | { childId: string; parentKey: string; outcome: ChildOutcome['outcome']; value: string; policy: ParentPolicy }
  | { childId: string; stored: string | Buffer };

/** settleChildren-12's answer: one code per child (1 settled, 0 nothing to do, -1 no parent), and the parents it failed that are children themselves. */
export interface Settled {
  codes: number[];
  noticed: string[];
}

/**
 * The typed bindings of a queue's flow scripts (docs/protocol.md, "Flows"). Like Scripts, it builds
 * each KEYS array in one place.
 */
export class FlowScripts {
  constructor(
    readonly client: RedisClient,
    private readonly keys: Keys,
    readonly maxEvents: number,
  ) {}

  /** Adds jobs of a flow to this queue (addFlowJobs-15), one code each. */
  async addFlowJobs(jobs: FlowJobRecord[], now: number): Promise<FlowAddCode[]> {
    const k = this.keys;
    const args: ScriptArg[] = [k.base, this.maxEvents, now];
    for (const job of jobs) {
      args.push(job.id, job.name, job.data, job.opts, job.timestamp, job.delay, job.priority, job.lifo ? '1' : '0',
        job.parentKey, job.parentJson, job.policy, job.children.length);
      for (const child of job.children) args.push(child.key, JSON.stringify(child.spec));
    }
    const reply = (await SCRIPTS.addFlowJobs.run(this.client,
      [k.wait, k.paused, k.meta, k.id, k.delayed, k.prioritized, k.pc, k.marker, k.events, k.waitingChildren, k.flowPending,
        k.completed, k.failed, k.notices, k.noticeData],
      args)) as number[];
    return reply.map((code) => ADD_CODES[code]);
  }

  /** The children of a parent exist: their specs leave its intent. Returns how many are left. */
  async ackPending(parentId: string, childKeys: string[]): Promise<number> {
    const k = this.keys;
    return (await SCRIPTS.ackFlowPending.run(this.client, [k.flow(parentId, 'pending'), k.flowPending], [parentId, ...childKeys])) as number;
  }

  /**
   * Finishes a flow job for good (finishFlowJob-8); answers its parent link ('' for none) and the
   * notice (JSON) it left in this queue. Throws EchoMQError -1/-2/-3/-6 (nothing changed).
   */
  async finishFlowJob(finish: Finish): Promise<{ parentKey: string; policy: ParentPolicy; notice: string }> {
    const k = this.keys;
    if (finish.outcome === 'retried') throw new Error(`EchoMQ: finishFlowJob-8 takes no retry (job ${finish.jobId}): send it by retryJob-12`);
    const reply = await SCRIPTS.finishFlowJob.run(this.client,
      [k.active, k.events, k.stalled, k.state(finish.outcome), k.job(finish.jobId), k.lock(finish.jobId), k.notices, k.noticeData],
      [finish.jobId, finish.token, finish.timestamp, finish.outcome, finish.value, finish.stacktrace, finish.keepCount,
        finish.keepAgeMs, k.base, this.maxEvents]);
    if (isErrorCode(reply)) throw new EchoMQError(reply, finish.jobId, SCRIPTS.finishFlowJob.fileName);
    const [, parentKey, policy, notice] = reply as [number, string, ParentPolicy, string];
    return { parentKey, policy, notice };
  }

  /** Records children's outcomes in their parents, which live in this queue (settleChildren-12). */
  async settleChildren(children: ChildOutcome[], now: number): Promise<Settled> {
    const k = this.keys;
    const args: ScriptArg[] = [k.base, now, this.maxEvents];
    for (const c of children) args.push(c.parentId, c.childKey, c.outcome, c.value, c.policy);
    const [codes, noticed] = (await SCRIPTS.settleChildren.run(this.client,
      [k.wait, k.paused, k.meta, k.delayed, k.prioritized, k.pc, k.marker, k.events, k.waitingChildren, k.failed, k.notices, k.noticeData],
      args)) as [number[], string[]];
    return { codes, noticed };
  }

  /**
   * Records a child as a dependency of a parent of this queue before the child is added
   * (addDependency-4; queue.add with `parent`). 'recorded', 'full' (the parent has `most`
   * unsettled dependencies) or 'missing' (no such parent); nothing changed unless recorded.
   */
  async addDependency(parentId: string, childKey: string, spec: string, most: number, now: number): Promise<'recorded' | 'full' | 'missing'> {
    const k = this.keys;
    const reply = await SCRIPTS.addDependency.run(this.client,
      [k.job(parentId), k.flow(parentId, 'dependencies'), k.flow(parentId, 'pending'), k.flowPending],
      [parentId, childKey, spec, now, most]) as number;
    return reply === 1 ? 'recorded' : reply === 0 ? 'full' : 'missing';
  }

  /**
   * An active job waits for its children (moveToWaitingChildren-7): true when it moved to
   * waiting-children (its lock released), false when there was nothing to wait for (nothing
   * changed). `childKey` waits for that child only. Throws EchoMQError -1/-2/-3/-6 (nothing changed).
   */
  async moveToWaitingChildren(jobId: string, token: string, childKey: string, now: number): Promise<{ moved: boolean; childFailed?: string }> {
    const k = this.keys;
    const reply = await SCRIPTS.moveToWaitingChildren.run(this.client,
      [k.active, k.stalled, k.waitingChildren, k.events, k.job(jobId), k.lock(jobId), k.flow(jobId, 'dependencies')],
      [jobId, token, now, this.maxEvents, childKey]);
    if (typeof reply === 'string') return { moved: false, childFailed: reply };
    if (isErrorCode(reply)) throw new EchoMQError(reply, jobId, SCRIPTS.moveToWaitingChildren.fileName);
    return { moved: reply === 1 };
  }

  /**
   * These notices were delivered, or this data was read and reported (ackNotices-2): each goes if
   * it still says what was delivered (a notice built here, compared field by field) or still is
   * what was read (data read from notice-data, compared byte for byte).
   */
  async ackNotices(acks: NoticeAck[]): Promise<void> {
    if (acks.length === 0) return;
    const k = this.keys;
    await SCRIPTS.ackNotices.run(this.client, [k.notices, k.noticeData],
      acks.flatMap((a): ScriptArg[] => ('stored' in a ? [a.childId, '', '', a.stored, ''] : [a.childId, a.parentKey, a.outcome, a.value, a.policy])));
  }

  /** Up to `count` notices written before `before` (ms): those a worker died before delivering. */
  async oldNotices(before: number, count: number): Promise<Array<{ childId: string; notice?: Buffer }>> {
    const k = this.keys;
    const ids = await this.client.zrangebyscore(k.notices, '-inf', before, 'LIMIT', 0, count);
    if (ids.length === 0) return [];
    // As bytes: what is acked is what was read, whatever bytes it holds (not valid UTF-8 too).
    const notices = await this.client.hmgetBuffer(k.noticeData, ...ids);
    return ids.map((childId, i) => ({ childId, notice: notices[i] ?? undefined }));
  }
}
