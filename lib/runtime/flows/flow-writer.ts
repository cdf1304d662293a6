import { EchoMQOptionError } from '../../protocol/errors.js';
import type { FlowAddCode, FlowScripts } from '../../protocol/flow-scripts.js';
import type { RedisClient } from '../../protocol/script.js';
import { explainRedisError } from '../core/redis-health.js';
import { levelsOf, type FlowNode } from './flow-tree.js';
import type { ParentNotices } from './parent-notices.js';

/** Jobs per addFlowJobs-15 call; their children's keys and specs ride along, so fewer than a plain add's. */
const NODES_PER_CALL = 200;
/** Children per addFlowJobs-15 call (a parent with more goes alone in its call: at most MAX_CHILDREN). */
const CHILDREN_PER_CALL = 1000;

/**
 * Writes planned flow trees (FlowProducer's add and addBulk): top-down, a level at a time, in
 * bounded addFlowJobs-15 calls per queue; then the intents of the level above are cleared.
 */
export class FlowWriter {
  constructor(
    private readonly client: RedisClient,
    /** The flow scripts of a queue (FlowProducer keeps one per queue). */
    private readonly flowsOf: (queueName: string, prefix: string) => FlowScripts,
    /** Delivers the notices of a queue's re-added children that had finished. */
    private readonly noticesOf: (queueName: string, prefix: string) => ParentNotices,
  ) {}

  /**
   * Writes the trees a level at a time, then clears the intents of the level above. A tree whose
   * root exists already (an add sent again, or the same ids added twice) is not written again:
   * the root is left as it is, and its intent, if a producer died writing it, is the sweep's.
   */
  async write(roots: FlowNode[]): Promise<void> {
    await this.refuseTakenIds(roots);
    const rootCodes = await this.addLevel(roots);
    const written = roots.filter((_, i) => rootCodes[i] === 'added');
    const levels = written.map(levelsOf);
    const depth = Math.max(0, ...levels.map((l) => l.length));
    for (let d = 1; d < depth; d++) {
      await this.addLevel(levels.flatMap((l) => l[d] ?? []));
      await this.ackParents(levels.flatMap((l) => l[d - 1] ?? []).filter((node) => node.children.length > 0));
    }
  }

  /**
   * Custom ids that another job holds (one not of this parent, or with another parent link) are
   * refused before anything is written. Roots are not checked: a root that exists is answered as
   * it is. A race with another add is still caught by addFlowJobs-15 (addLevel).
   */
  private async refuseTakenIds(roots: FlowNode[]): Promise<void> {
    const custom: Array<{ node: FlowNode; at: string }> = [];
    const visit = (node: FlowNode, at: string) => node.children.forEach((child, i) => {
      const path = `${at}.children[${i}]`;
      if (child.customId) custom.push({ node: child, at: path });
      visit(child, path);
    });
    roots.forEach((root, i) => visit(root, roots.length === 1 ? 'flow' : `addBulk[${i}]`));
    if (custom.length === 0) return;
    const pipeline = this.client.pipeline();
    for (const { node } of custom) pipeline.hmget(node.keys.job(node.record.id), 'name', 'parentKey');
    const replies = (await pipeline.exec()) ?? [];
    custom.forEach(({ node, at }, i) => {
      const [error, reply] = replies[i];
      if (error) throw error;
      const [name, parentKey] = reply as [string | null, string | null];
      if (name !== null && parentKey !== node.record.parentKey) {
        throw new EchoMQOptionError(`${at}.opts.jobId`, `is ${node.record.id}: queue ${node.queueName} holds a job of that id that is not this parent's child; nothing was written`);
      }
    });
  }

  /** Adds one level (addFlowJobs-15, per queue, in bounded calls); one code per node, in order. */
  private async addLevel(level: FlowNode[]): Promise<FlowAddCode[]> {
    const codes = new Array<FlowAddCode>(level.length);
    const byQueue = groupBy(level.map((node, i) => ({ node, i })), ({ node }) => node.keys.base);
    await Promise.all([...byQueue.values()].map(async (entries) => {
      const { queueName, prefix } = entries[0].node;
      const scripts = this.flowsOf(queueName, prefix);
      for (const chunk of chunksOf(entries)) {
        const answered = await scripts.addFlowJobs(chunk.map(({ node }) => node.record), Date.now()).catch((error: unknown) => {
          throw explainRedisError(error, `add of a flow's jobs to queue ${queueName}`);
        });
        answered.forEach((code, j) => (codes[chunk[j].i] = code));
        const finished = chunk.filter((_, j) => answered[j] === 'finished').map(({ node }) => node.record.id);
        if (finished.length > 0) await this.noticesOf(queueName, prefix).deliverStored(finished);
        const taken = chunk.filter((_, j) => answered[j] === 'taken').map(({ node }) => node);
        if (taken.length > 0) await this.dropTaken(taken);
      }
    }));
    return codes;
  }

  /**
   * A child id taken by another job between refuseTakenIds and the write (a race with another
   * add): its parent forgets it (settled as removed), so no parent waits for a child that is not
   * its own; then the add fails, naming it.
   */
  private async dropTaken(taken: FlowNode[]): Promise<void> {
    const root = taken.find((node) => node.parent === undefined);
    if (root) {
      // Nothing of its tree was written: a root comes first.
      throw new EchoMQOptionError('opts.jobId', `is ${root.record.id}: queue ${root.queueName} holds a job of that id that is a child in another flow; nothing was written`);
    }
    for (const node of taken) {
      const parent = node.parent!;
      await this.flowsOf(parent.queueName, parent.prefix).settleChildren([{ parentId: parent.record.id,
        childKey: node.keys.job(node.record.id), outcome: 'failed', value: 'the id was taken by another job', policy: 'remove' }], Date.now());
    }
    const node = taken[0];
    throw new EchoMQOptionError('opts.jobId', `is ${node.record.id}: queue ${node.queueName} holds a job of that id that is not this flow's; its parent was told to do without it`);
  }

  /** The children of these parents exist now: their intents are cleared. */
  private async ackParents(parents: FlowNode[]): Promise<void> {
    await Promise.all(parents.map((parent) =>
      this.flowsOf(parent.queueName, parent.prefix).ackPending(parent.record.id, parent.record.children.map((child) => child.key))));
  }
}

/** A level's entries of one queue in calls of at most NODES_PER_CALL jobs and CHILDREN_PER_CALL children (a bigger parent alone). */
function chunksOf<T extends { node: FlowNode }>(entries: T[]): T[][] {
  const chunks: T[][] = [];
  let chunk: T[] = [];
  let children = 0;
  for (const entry of entries) {
    const count = entry.node.children.length;
    if (chunk.length > 0 && (chunk.length >= NODES_PER_CALL || children + count > CHILDREN_PER_CALL)) {
      chunks.push(chunk);
      chunk = [];
      children = 0;
    }
    chunk.push(entry);
    children += count;
  }
  if (chunk.length > 0) chunks.push(chunk);
  return chunks;
}

function groupBy<T>(items: T[], keyOf: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const group = groups.get(keyOf(item));
    if (group) group.push(item);
    else groups.set(keyOf(item), [item]);
  }
  return groups;
}
