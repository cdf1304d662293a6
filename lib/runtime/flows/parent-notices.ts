import { FlowScripts, type ChildOutcome, type NoticeAck, type ParentPolicy } from '../../protocol/flow-scripts.js';
import { Keys } from '../../protocol/keys.js';
import type { RedisClient } from '../../protocol/script.js';
import { CallBatcher } from '../core/call-batcher.js';
import { parseNotice, type Notice } from './notice.js';

/** Notices a sweep takes per call: a bounded read, and as many settles. */
const SWEEP_BATCH = 100;
/** Settles per settleChildren-12 call. */
const SETTLE_BATCH = 200;
/** A sweep goes on while its batches come back full, for at most this long (a backlog after an outage drains in one sweep, not one batch an interval). */
const SWEEP_BUDGET_MS = 1000;
/**
 * Settles and deletes wait for the end of the turn, even a lone one: the notices of one
 * finishFlowJobs-15 call reach here in the same turn, and sending the first at once split every
 * such burst into a call of one and a call of the rest.
 */
const sendAtTurnEnd = (): boolean => false;

/**
 * The second step of a child's finish (docs/protocol.md, "Flows"): its notice, written by the
 * finish in the child's slot, is settled in the parent's slot (settleChildren-12), then deleted.
 * The parent lives in another slot (on Redis Cluster, maybe on another node), so the two cannot be
 * one script; the notice makes the pair safe: a worker that dies between them leaves the notice,
 * and `sweep` (run in the stalled sweep's rhythm by every worker of the child's queue) delivers it.
 * A settle is idempotent, so a notice delivered twice changes nothing.
 *
 * Settles for one parent queue made in the same turn go in one call, as do the deletes: a burst
 * of children finishing costs a call per burst, not per child.
 */
export class ParentNotices {
  private readonly own: FlowScripts;
  private readonly settlers = new Map<string, { scripts: FlowScripts; batcher: CallBatcher<ChildOutcome, number> }>();
  private readonly acks: CallBatcher<NoticeAck, void>;
  private readonly inFlight = new Set<Promise<void>>();

  constructor(
    private readonly client: RedisClient,
    private readonly keys: Keys,
    private readonly maxEvents: number,
    private readonly onError: (error: Error) => void,
    /** How old a notice is before the sweep takes it as left by a dead worker (ms). */
    private readonly sweepAfterMs: number,
  ) {
    this.own = new FlowScripts(client, keys, maxEvents);
    this.acks = new CallBatcher<NoticeAck, void>(
      async (delivered) => {
        await this.own.ackNotices(delivered);
        return delivered.map(() => undefined);
      },
      SETTLE_BATCH,
      sendAtTurnEnd,
    );
  }

  /** Delivers a notice this worker's finish just wrote, in the background; `drain` waits for it. */
  send(notice: Notice): void {
    this.track(this.deliver(notice, this.keys));
  }

  /**
   * Children of this queue that the stalled sweep failed for good (moveStalledJobsToWait-8, a fixed
   * script, knows nothing of flows): for those with a parent, a notice is written as
   * finishFlowJob-8 would have (one MULTI in this slot), then delivered. A worker that dies before
   * the MULTI leaves the parent to FlowRecovery's backstop, one that dies after it to `sweep`.
   */
  noticeStalledFailures(jobIds: string[]): void {
    if (jobIds.length === 0) return;
    this.track(this.writeStalledNotices(jobIds));
  }

  /**
   * Settles a child's outcome read from elsewhere than a notice (FlowRecovery: the child's hash,
   * or a child that is gone); there is no notice to delete. Answers settleChildren-12's code.
   */
  async settle(parentKey: string, outcome: Omit<ChildOutcome, 'parentId'>): Promise<number> {
    const parent = parseJobKey(parentKey);
    if (!parent) return -1;
    return this.settlerOf(parent.keys).batcher.submit({ parentId: parent.id, ...outcome });
  }

  private async writeStalledNotices(jobIds: string[]): Promise<void> {
    const links = await this.client.pipeline(jobIds.map((id) => ['hmget', this.keys.job(id), 'parentKey', 'pfp', 'failedReason'])).exec() ?? [];
    const notices: Notice[] = [];
    links.forEach(([error, reply], i) => {
      if (error) throw error;
      const [parentKey, policy, reason] = reply as Array<string | null>;
      if (!parentKey) return;
      const value = reason ?? 'job stalled more than allowable limit';
      notices.push({ childId: jobIds[i], parentKey, outcome: 'failed', value, policy: (policy ?? '') as ParentPolicy });
    });
    if (notices.length === 0) return;
    const now = Date.now();
    const multi = this.client.multi();
    // The JSON finishFlowJob-8 writes: [parentKey, outcome, value, policy].
    for (const n of notices) multi.zadd(this.keys.notices, now, n.childId).hset(this.keys.noticeData, n.childId, JSON.stringify([n.parentKey, n.outcome, n.value, n.policy]));
    await multi.exec();
    for (const notice of notices) this.send(notice);
  }

  private track(work: Promise<void>): void {
    const tracked: Promise<void> = work.catch((error: unknown) => this.onError(error as Error))
      .finally(() => this.inFlight.delete(tracked));
    this.inFlight.add(tracked);
  }

  /** Delivers, in the background, the notice of a child of this queue as Redis holds it (none: nothing to do). */
  sendStored(childId: string): void {
    this.track(this.deliverFrom(this.keys, [childId]));
  }

  /** Resolves when every delivery sent so far has ended (the worker is closing). */
  async drain(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight]);
  }

  /**
   * Delivers notices older than sweepAfterMs (left by a worker that died after its finish), in
   * bounded batches, while they come back full and for at most SWEEP_BUDGET_MS. Returns how many.
   */
  async sweep(now = Date.now()): Promise<number> {
    const until = Date.now() + SWEEP_BUDGET_MS;
    let swept = 0;
    for (;;) {
      const old = await this.own.oldNotices(now - this.sweepAfterMs, SWEEP_BATCH);
      await Promise.all(old.map(({ childId, notice }) =>
        // No data: it went with an earlier ack (ackNotices-2 drops the leftover entry).
        (notice === undefined ? this.ack(this.keys, { childId, stored: '' }) : this.deliverStoredNotice(this.keys, childId, notice))));
      swept += old.length;
      if (old.length < SWEEP_BATCH || Date.now() >= until) return swept;
    }
  }

  /**
   * Settles a notice in the parent's queue, then deletes it from `from` (the queue that holds it)
   * by `ack`: the notice itself when this runtime built it, the data as read when it was read.
   * A parent failed by failParentOnFailure that is a child itself left its own notice in its
   * queue: that one is delivered next, up the tree.
   */
  private async deliver(notice: Notice, from: Keys, ack: NoticeAck = notice): Promise<void> {
    const parent = parseJobKey(notice.parentKey);
    if (parent) {
      const { batcher } = this.settlerOf(parent.keys);
      await batcher.submit({ parentId: parent.id, childKey: from.job(notice.childId), outcome: notice.outcome, value: notice.value, policy: notice.policy });
    } else {
      // Not a job key of this protocol: no parent can ever be found by it. Said, then dropped.
      this.onError(new Error(`EchoMQ: the notice of job ${notice.childId} of queue ${from.queueName} names parent "${notice.parentKey}", which is not a job key (P:{queue}:id); dropped`));
    }
    await this.ack(from, ack);
  }

  /** Deletes a delivered notice (or data read) from `from`, the queue that holds it, if it still says the same (ackNotices-2). */
  private async ack(from: Keys, ack: NoticeAck): Promise<void> {
    if (from.base === this.keys.base) return this.acks.submit(ack);
    await new FlowScripts(this.client, from, this.maxEvents).ackNotices([ack]);
  }

  private settlerOf(keys: Keys): { scripts: FlowScripts; batcher: CallBatcher<ChildOutcome, number> } {
    let settler = this.settlers.get(keys.base);
    if (!settler) {
      const scripts = new FlowScripts(this.client, keys, this.maxEvents);
      const batcher = new CallBatcher<ChildOutcome, number>(
        async (batch) => {
          const { codes, noticed } = await scripts.settleChildren(batch, Date.now());
          // Parents failed here that are children too: their notices go up the tree now.
          if (noticed.length > 0) void this.deliverFrom(keys, noticed).catch((error: unknown) => this.onError(error as Error));
          return codes;
        },
        SETTLE_BATCH,
        sendAtTurnEnd,
      );
      settler = { scripts, batcher };
      this.settlers.set(keys.base, settler);
    }
    return settler;
  }

  /** Delivers the notices of these jobs of this queue, as they are stored (a producer's re-added children that had finished). */
  deliverStored(childIds: string[]): Promise<void> {
    return this.deliverFrom(this.keys, childIds);
  }

  /** Delivers the notices of these jobs of a queue (`keys`), as they are stored. */
  private async deliverFrom(keys: Keys, childIds: string[]): Promise<void> {
    const data = await this.client.hmgetBuffer(keys.noticeData, ...childIds);
    await Promise.all(childIds.map((childId, i) => {
      const notice = data[i];
      return notice === null ? undefined : this.deliverStoredNotice(keys, childId, notice);
    }));
  }

  /**
   * Delivers a notice as Redis holds it (`stored`, its bytes as read). One that is no notice
   * (parseNotice: bad JSON, not an array, fields missing or of the wrong kind) can never be
   * delivered: it is reported once, through the worker's error channel, and deleted, rather than
   * read and refused again by every sweep. Either way the ack sends back the bytes read
   * (ackNotices-2 deletes them while HGET answers the same): no JSON parser decides what goes, so
   * data that Lua's cjson reads as a notice and JSON.parse does not (NaN, hex) goes too, and a
   * newer notice written meanwhile stays.
   */
  private async deliverStoredNotice(keys: Keys, childId: string, stored: Buffer): Promise<void> {
    const json = stored.toString();
    const notice = parseNotice(childId, json);
    if (notice) return this.deliver(notice, keys, { childId, stored });
    const shown = json.length > 200 ? `${json.slice(0, 200)}...` : json;
    this.onError(new Error(`EchoMQ: the notice of job ${childId} of queue ${keys.queueName} is not a notice ([parentKey, outcome, value, policy]): ${shown}; dropped`));
    await this.ack(keys, { childId, stored });
  }
}

/** A job key `P:{Q}:<id>` as its queue's Keys and the id; undefined when it is not one. */
export function parseJobKey(jobKey: string): { keys: Keys; id: string } | undefined {
  const match = /^(.+):\{([^{}]+)\}:([^:]+)$/.exec(jobKey);
  return match ? { keys: new Keys(match[2], match[1]), id: match[3] } : undefined;
}
