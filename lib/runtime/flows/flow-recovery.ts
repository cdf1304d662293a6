import { FlowScripts, type FlowJobRecord } from '../../protocol/flow-scripts.js';
import { Keys } from '../../protocol/keys.js';
import type { RedisClient } from '../../protocol/script.js';
import { parseSpec } from './flow-tree.js';
import { ParentNotices, parseJobKey } from './parent-notices.js';

/**
 * How old a parent's intent (flow-pending) or wait (waiting-children) must be before the recovery
 * takes it as left behind (ms). A live producer acknowledges a level within a few round trips and
 * a live worker settles a finished child within one, so 10 s is far past both; clocks of the
 * producer's and the worker's hosts may differ by less than that.
 */
export const FLOW_RECOVERY_GRACE_MS = 10_000;
/** Parents whose intent one call rolls forward, and specs read per parent (HRANDFIELD count). */
const INTENTS_PER_CALL = 20;
const SPECS_PER_PARENT = 200;
/** Parents in waiting-children one backstop call looks at, and dependencies sampled per parent. */
const PARENTS_PER_CALL = 20;
const DEPENDENCIES_PER_PARENT = 100;

/** Why a dependency was let go by the backstop: its job is not there, or is not this flow's. */
const GONE = 'child job is gone';

/**
 * The parent side of flow recovery (docs/protocol.md, "Flows: recovery"), run by every worker lane
 * after each stalled sweep, in this lane's queue, each step bounded per call:
 *
 * - roll-forward: a parent in flow-pending older than the grace was written by a producer that died
 *   before it made (or acknowledged) all the children: they are made from their specs in the
 *   parent's intent (addFlowJobs-15, idempotent: a child that exists with this parent link answers
 *   0), then acknowledged (ackFlowPending-2);
 * - backstop: a parent in waiting-children older than the grace has a sample of its dependencies
 *   checked in their own queues (cross-slot reads); a child finished (completed, or failed for
 *   good) whose parent has not heard is settled from its hash, a child that is gone (or is another
 *   job) is let go as removeDependencyOnFailure would. This covers the one window no notice
 *   covers: a worker that died between the stalled sweep's failure of a child and the notice.
 *
 * With no flows in the queue it costs two ZRANGEBYSCOREs that answer nothing.
 */
export class FlowRecovery {
  /** Where the backstop goes on in the old waiting-children (by rank among them); 0 starts a lap. */
  private cursor = 0;

  constructor(
    private readonly client: RedisClient,
    private readonly keys: Keys,
    private readonly maxEvents: number,
    private readonly notices: Pick<ParentNotices, 'settle'>,
    private readonly onError: (error: Error) => void,
    private readonly graceMs = FLOW_RECOVERY_GRACE_MS,
  ) {}

  async sweep(now = Date.now()): Promise<void> {
    await this.rollForward(now);
    await this.backstop(now);
  }

  /** Rolls forward up to INTENTS_PER_CALL intents older than the grace; answers how many it took. */
  async rollForward(now = Date.now()): Promise<number> {
    const ids = await this.client.zrangebyscore(this.keys.flowPending, '-inf', now - this.graceMs, 'LIMIT', 0, INTENTS_PER_CALL);
    await Promise.all(ids.map((id) => this.rollParent(id, now)));
    return ids.length;
  }

  /** Looks at up to PARENTS_PER_CALL old waiting parents, going on from the last call's place; answers how many. */
  async backstop(now = Date.now()): Promise<number> {
    const ids = await this.client.zrangebyscore(this.keys.waitingChildren, '-inf', now - this.graceMs, 'LIMIT', this.cursor, PARENTS_PER_CALL);
    // A short page ends the lap. Ranks shift as parents leave, so a lap may skip one: the next lap sees it.
    this.cursor = ids.length < PARENTS_PER_CALL ? 0 : this.cursor + ids.length;
    await Promise.all(ids.map((id) => this.checkParent(id)));
    return ids.length;
  }

  private async rollParent(parentId: string, now: number): Promise<void> {
    // HRANDFIELD, not HSCAN from cursor 0: the specs made are deleted, and a hash table emptied at
    // its front makes HSCAN 0 answer nothing (it stops after so many empty buckets) while specs
    // remain further on; Redis does not shrink the table until it is under 10% full.
    // ioredis answers [field, value] pairs, a plain RESP2 client a flat list: both read the same.
    const flat = ((await this.client.call('HRANDFIELD', this.keys.flow(parentId, 'pending'), SPECS_PER_PARENT, 'WITHVALUES')) as Array<string | string[]>).flat();
    const groups = new Map<string, { keys: Keys; records: FlowJobRecord[]; childKeys: string[] }>();
    const made: string[] = [];
    const unreadable: string[] = [];
    for (let i = 0; i < flat.length; i += 2) {
      const spec = parseSpec(flat[i + 1]);
      if (!spec) {
        unreadable.push(flat[i]);
        continue;
      }
      const keys = new Keys(spec.queueName, spec.prefix);
      let group = groups.get(keys.base);
      if (!group) groups.set(keys.base, group = { keys, records: [], childKeys: [] });
      group.records.push(spec.record);
      group.childKeys.push(flat[i]);
    }
    // A spec that cannot be read could never be made: said once, and the parent goes on without
    // that child (policy remove, as for a taken id) instead of every sweep failing on it.
    for (const childKey of unreadable) {
      this.onError(new Error(`EchoMQ: flow recovery: the intent of parent ${this.keys.job(parentId)} holds an unreadable spec for ${childKey}; the parent goes on without it`));
      await this.notices.settle(this.keys.job(parentId), { childKey, outcome: 'failed', value: `${GONE}: its spec could not be read`, policy: 'remove' });
      made.push(childKey);
    }
    await Promise.all([...groups.values()].map(async ({ keys, records, childKeys }) => {
      const codes = await new FlowScripts(this.client, keys, this.maxEvents).addFlowJobs(records, now);
      await Promise.all(codes.map(async (code, i) => {
        if (code === 'taken') {
          // Another job holds the id: this parent would wait for it for ever. It forgets the
          // child (policy remove), as the producer does on the same race and the backstop does
          // for a dependency that is not this parent's job.
          this.onError(new Error(`EchoMQ: flow recovery: job ${childKeys[i]} of parent ${this.keys.job(parentId)} is another job's; the parent goes on without it`));
          await this.notices.settle(this.keys.job(parentId), { childKey: childKeys[i], outcome: 'failed', value: `${GONE}: its id is another job's`, policy: 'remove' });
        } else if (code === 'finished') {
          // Made before, and finished: its notice was written again (addFlowJobs-15), delivered now.
          await new ParentNotices(this.client, keys, this.maxEvents, this.onError, 0).deliverStored([records[i].id]);
        }
        made.push(childKeys[i]);
      }));
    }));
    // Clears what was made; with nothing left (or no intent at all: the parent went) the parent leaves flow-pending.
    await new FlowScripts(this.client, this.keys, this.maxEvents).ackPending(parentId, made);
  }

  private async checkParent(parentId: string): Promise<void> {
    const parentKey = this.keys.job(parentId);
    // The sample before the intent check: a dependency added meanwhile (addDependency-4 writes it
    // with its intent) is then seen with its intent, never as a child that is gone.
    const [[e2, sample], [e1, intent]] = (await this.client.pipeline()
      .srandmember(this.keys.flow(parentId, 'dependencies'), DEPENDENCIES_PER_PARENT)
      .exists(this.keys.flow(parentId, 'pending'))
      .exec()) as Array<[Error | null, unknown]>;
    if (e1 || e2) throw e1 ?? e2;
    // Children still to be made (the roll-forward's business): a missing one is not gone.
    if (intent === 1) return;
    const childKeys = sample as string[];
    if (childKeys.length === 0) return;
    const known = await this.client.hmget(this.keys.flow(parentId, 'unsuccessful'), ...childKeys);
    const byQueue = new Map<string, { keys: Keys; items: Array<{ childKey: string; id: string; known: string | null }> }>();
    childKeys.forEach((childKey, i) => {
      const child = parseJobKey(childKey);
      if (!child) return;
      let group = byQueue.get(child.keys.base);
      if (!group) byQueue.set(child.keys.base, group = { keys: child.keys, items: [] });
      group.items.push({ childKey, id: child.id, known: known[i] });
    });
    await Promise.all([...byQueue.values()].map((group) => this.checkChildren(parentKey, group.keys, group.items)));
  }

  /** Reads children of one queue (one slot, one pipeline) and settles those finished or gone. */
  private async checkChildren(parentKey: string, keys: Keys, items: Array<{ childKey: string; id: string; known: string | null }>): Promise<void> {
    const pipeline = this.client.pipeline();
    for (const { childKey, id } of items) {
      pipeline.hmget(childKey, 'parentKey', 'pfp', 'returnvalue', 'failedReason')
        .zscore(keys.completed, id).zscore(keys.failed, id).hexists(keys.noticeData, id);
    }
    const replies = ((await pipeline.exec()) ?? []).map(([error, reply]) => {
      if (error) throw error;
      return reply;
    });
    await Promise.all(items.map(async ({ childKey, id, known }, i) => {
      const [fields, completedAt, failedAt, noticed] = replies.slice(4 * i, 4 * i + 4) as [Array<string | null>, string | null, string | null, number];
      const [link, policy, returnvalue, failedReason] = fields;
      // A notice in flight is the notices' sweep's to deliver (it may carry the value of a job removed at its finish).
      if (noticed === 1) return;
      if (link !== parentKey) {
        // Gone (removed, or never this flow's): the parent stops waiting for it.
        await this.notices.settle(parentKey, { childKey, outcome: 'failed', value: link === null ? GONE : `${GONE}: job ${id} is another job's`, policy: 'remove' });
      } else if (completedAt !== null) {
        await this.notices.settle(parentKey, { childKey, outcome: 'completed', value: returnvalue ?? 'null', policy: '' });
      } else if (failedAt !== null && known !== failedReason) {
        await this.notices.settle(parentKey, { childKey, outcome: 'failed', value: failedReason ?? '', policy: (policy ?? '') as FlowJobRecord['policy'] });
      }
    }));
  }
}
