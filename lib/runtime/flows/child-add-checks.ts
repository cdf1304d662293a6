import { EchoMQError, EchoMQOptionError } from '../../protocol/errors.js';
import type { Keys } from '../../protocol/keys.js';
import type { RedisClient } from '../../protocol/script.js';
import { MAX_CHILDREN } from './flow-tree.js';
import type { CheckedParent } from './step-jobs.js';

/** A job of an add or addBulk, as the checks see it: where it is named, its custom id, its parent. */
export interface AddEntry {
  /** `add` or `addBulk[i]`, for the errors. */
  at: string;
  customId?: string;
  parent?: CheckedParent;
}

/**
 * What `queue.add` and `addBulk` with `parent` check in Redis before anything is written, after
 * every option was checked, so that one bad entry of an addBulk writes nothing at all:
 * - every parent exists (EchoMQError -1 otherwise, as addDependency-4 answers it). A parent that
 *   is a plain entry of this addBulk is refused (EchoMQOptionError `opts.parent`): written as a
 *   plain job, it is ready before its children are added, and a worker may run and finish it
 *   without them; a tree whose parent is new goes through a FlowProducer, which writes the parent
 *   in waiting-children with its children;
 * - no parent would hold more than MAX_CHILDREN unsettled children (EchoMQOptionError `opts.parent`);
 * - no child's custom id is held by a job that is not this parent's child (EchoMQOptionError
 *   `opts.jobId`), and no id is named twice in one addBulk with two different parents.
 * The reads are one pipeline per parent queue and one in the children's queue, in parallel. A
 * race after them (a parent removed, an id taken meanwhile) is still refused by the writes
 * themselves (addDependency-4, addFlowJobs-15), with the same errors.
 */
export async function checkChildAdds(client: RedisClient, childKeys: Keys, queueName: string, entries: AddEntry[]): Promise<void> {
  const children = entries.filter((entry): entry is AddEntry & { parent: CheckedParent } => entry.parent !== undefined);
  if (children.length === 0) return;
  refuseIdsNamedTwice(entries);
  refuseParentsOfTheBatch(entries, childKeys);
  const byParent = new Map<string, { parent: CheckedParent; entries: Array<AddEntry & { parent: CheckedParent }> }>();
  for (const entry of children) {
    const parentKey = entry.parent.keys.job(entry.parent.id);
    const group = byParent.get(parentKey);
    if (group) group.entries.push(entry);
    else byParent.set(parentKey, { parent: entry.parent, entries: [entry] });
  }
  const [parentsRead, heldIds] = await Promise.all([readParents(client, [...byParent.values()], childKeys), readCustomIds(client, childKeys, children)]);
  // In entry order, so the error names the first entry that cannot be added.
  for (const entry of entries) {
    if (!entry.parent) continue;
    const parentKey = entry.parent.keys.job(entry.parent.id);
    const read = parentsRead.get(parentKey)!;
    if (!read.exists) {
      throw new EchoMQError(-1, entry.parent.id, 'addDependency-4.lua', `the parent named by ${entry.at}: opts.parent does not exist in ${entry.parent.keys.queueKey}; nothing was written`);
    }
    if (read.unsettled + read.adding > MAX_CHILDREN) {
      throw new EchoMQOptionError(`${entry.at}: opts.parent`, `names job ${entry.parent.id}, which has ${read.unsettled} unsettled children: ${read.adding} more would pass ${MAX_CHILDREN} (the most one parent takes); nothing was written`);
    }
    const holder = entry.customId === undefined ? undefined : heldIds.get(entry.customId);
    if (holder !== undefined && holder !== parentKey) {
      throw new EchoMQOptionError(`${entry.at}: opts.jobId`, `is ${entry.customId}: queue ${queueName} holds a job of that id that is not this parent's child; nothing was written`);
    }
  }
}

/** A parent that is a plain entry of the batch (in this queue, by its custom id): refused, before Redis is read. */
function refuseParentsOfTheBatch(entries: AddEntry[], childKeys: Keys): void {
  const plain = new Map<string, AddEntry>();
  for (const entry of entries) {
    if (!entry.parent && entry.customId !== undefined) plain.set(childKeys.job(entry.customId), entry);
  }
  for (const entry of entries) {
    const parentEntry = entry.parent && plain.get(entry.parent.keys.job(entry.parent.id));
    if (!parentEntry) continue;
    throw new EchoMQOptionError(`${entry.at}: opts.parent`, `names job ${entry.parent!.id}, a plain entry of this addBulk (${parentEntry.at}): it would be ready, and could run, before its children exist; add the tree with a FlowProducer; nothing was written`);
  }
}

/** One id for two jobs of one addBulk with different parents (or one with none) cannot be both: refused. */
function refuseIdsNamedTwice(entries: AddEntry[]): void {
  const first = new Map<string, AddEntry>();
  for (const entry of entries) {
    if (entry.customId === undefined) continue;
    const seen = first.get(entry.customId);
    if (!seen) {
      first.set(entry.customId, entry);
      continue;
    }
    const parentOf = (e: AddEntry) => (e.parent ? e.parent.keys.job(e.parent.id) : '');
    if (parentOf(seen) !== parentOf(entry)) {
      throw new EchoMQOptionError(`${entry.at}: opts.jobId`, `is ${entry.customId}, the id of ${seen.at} too, with another parent: one id names one job; nothing was written`);
    }
  }
}

/** Each parent: whether it exists, its unsettled children, and how many of this add's children it does not hold yet. */
async function readParents(
  client: RedisClient,
  groups: Array<{ parent: CheckedParent; entries: AddEntry[] }>,
  childKeys: Keys,
): Promise<Map<string, { exists: boolean; unsettled: number; adding: number }>> {
  const read = new Map<string, { exists: boolean; unsettled: number; adding: number }>();
  const byQueue = new Map<string, typeof groups>();
  for (const group of groups) {
    const queue = byQueue.get(group.parent.keys.base);
    if (queue) queue.push(group);
    else byQueue.set(group.parent.keys.base, [group]);
  }
  await Promise.all([...byQueue.values()].map(async (queueGroups) => {
    const pipeline = client.pipeline();
    const customKeys = queueGroups.map(({ entries }) => [...new Set(entries.flatMap((e) => (e.customId === undefined ? [] : [childKeys.job(e.customId)])))]);
    queueGroups.forEach(({ parent }, i) => {
      const deps = parent.keys.flow(parent.id, 'dependencies');
      pipeline.exists(parent.keys.job(parent.id)).scard(deps);
      if (customKeys[i].length > 0) pipeline.smismember(deps, ...customKeys[i]);
    });
    const replies = ((await pipeline.exec()) ?? []).map(([error, reply]) => {
      if (error) throw error;
      return reply;
    });
    let at = 0;
    queueGroups.forEach(({ parent, entries }, i) => {
      const exists = replies[at++] === 1;
      const unsettled = replies[at++] as number;
      const held = customKeys[i].length > 0 ? (replies[at++] as number[]).filter((member) => member === 1).length : 0;
      const automatic = entries.filter((e) => e.customId === undefined).length;
      read.set(parent.keys.job(parent.id), { exists, unsettled, adding: automatic + customKeys[i].length - held });
    });
  }));
  return read;
}

/** The children's custom ids that a job holds already: id -> that job's parentKey ("" for none). */
async function readCustomIds(client: RedisClient, childKeys: Keys, children: AddEntry[]): Promise<Map<string, string>> {
  const ids = [...new Set(children.flatMap((e) => (e.customId === undefined ? [] : [e.customId])))];
  const held = new Map<string, string>();
  if (ids.length === 0) return held;
  const pipeline = client.pipeline();
  for (const id of ids) pipeline.hmget(childKeys.job(id), 'name', 'parentKey');
  const replies = (await pipeline.exec()) ?? [];
  ids.forEach((id, i) => {
    const [error, reply] = replies[i];
    if (error) throw error;
    const [name, parentKey] = reply as [string | null, string | null];
    if (name !== null) held.set(id, parentKey ?? '');
  });
  return held;
}
