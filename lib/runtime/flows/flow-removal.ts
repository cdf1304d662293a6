import { EchoMQOptionError } from '../../protocol/errors.js';
import { FlowScripts } from '../../protocol/flow-scripts.js';
import type { Keys } from '../../protocol/keys.js';
import { describe } from '../../protocol/names.js';
import type { RedisClient } from '../../protocol/script.js';
import { JobControlScripts } from '../../protocol/job-control-scripts.js';
import { DEFAULTS } from '../core/defaults.js';
import type { JobContext, RemoveOptions } from '../job/job-context.js';
import { parseNotice } from './notice.js';
import { parseJobKey } from './parent-notices.js';

/** Children removed at once: one removeJob-14 call each, this many in flight. */
const CHILD_BATCH = 100;

/**
 * Removes a job of any queue with its flow keys (removeJob-14), then does what the job's flow asks
 * in other slots, where no script of this queue can reach (docs/flows.md, "Removing jobs of a flow"):
 * - a child's parent drops it: the notice the removal left (or the child's completion notice not
 *   delivered yet) is settled in the parent's queue, then deleted. If this process dies first,
 *   the sweep of the child queue's workers delivers it.
 * - a parent's unsettled children are removed after it, level by level, in bounded batches; a
 *   child a worker holds is left to finish, and its settle then finds no parent (-1).
 */
export async function removeJobOfFlow(context: JobContext, jobId: string, opts: RemoveOptions): Promise<'removed' | 'locked' | 'missing'> {
  if (typeof opts !== 'object' || opts === null) throw new EchoMQOptionError('remove', `takes { removeChildren? }, got ${describe(opts)}`);
  if (opts.removeChildren !== undefined && typeof opts.removeChildren !== 'boolean') {
    throw new EchoMQOptionError('removeChildren', `must be true or false, got ${describe(opts.removeChildren)}`);
  }
  const removeChildren = opts.removeChildren !== false;
  const maxEvents = context.maxEvents ?? DEFAULTS.maxEvents;
  const removed = await context.control.removeJob(jobId, { children: removeChildren, notifyParent: true });
  // 'reparented' needs an expected parent, which this call does not give.
  if (removed.outcome !== 'removed') return removed.outcome === 'reparented' ? 'missing' : removed.outcome;
  if (removed.notice !== undefined) await tellParent(context.client, context.keys, jobId, removed.notice, maxEvents);
  if (removed.children.length > 0) await removeDescendants(context.client, context.keys.job(jobId), removed.children, maxEvents);
  return 'removed';
}

/**
 * Settles a removed child's notice in its parent's queue, then deletes it from the child's.
 * removeJob-14 answers only a notice it could read (its own, or one it kept), so `null` here
 * would be another runtime's doing: the notice is then left to the sweep, which reports it.
 * A parent that settle failed (failParentOnFailure) and that is a child itself wrote its own
 * notice in its queue (settleChildren-12's `noticed`): it goes up the tree next, level by level,
 * as a worker's delivery sends it (ParentNotices), so a grandparent with no worker serving the
 * middle queue is not left waiting for a sweep that may never come.
 */
async function tellParent(client: RedisClient, keys: Keys, childId: string, json: string, maxEvents: number): Promise<void> {
  let next: { from: Keys; childId: string; json: string } | undefined = { from: keys, childId, json };
  while (next) {
    const { from, json: stored } = next;
    const notice = parseNotice(next.childId, stored);
    next = undefined;
    if (!notice) return;
    const parent = parseJobKey(notice.parentKey);
    if (parent) {
      const { noticed } = await new FlowScripts(client, parent.keys, maxEvents).settleChildren(
        [{ parentId: parent.id, childKey: from.job(notice.childId), outcome: notice.outcome, value: notice.value, policy: notice.policy }], Date.now());
      // One settle fails at most one parent: the tree is walked up as a chain.
      const [failed] = noticed;
      const above = failed === undefined ? null : await client.hget(parent.keys.noticeData, failed);
      if (above !== null) next = { from: parent.keys, childId: failed, json: above };
    }
    // Acked as read (what removeJob-14 or HGET answered): it goes while it is still that.
    await new FlowScripts(client, from, maxEvents).ackNotices([{ childId: notice.childId, stored }]);
  }
}

/**
 * Removes children (and theirs) whose parent was removed: no notices, their parent is gone. Each
 * is removed only while it is still the child of the parent it was read from (removeJob-14's
 * expected parent): one removed and added again under another parent since is that one's now.
 */
async function removeDescendants(client: RedisClient, parentKey: string, childKeys: string[], maxEvents: number): Promise<void> {
  const scripts = new Map<string, JobControlScripts>();
  const scriptsOf = (keys: Keys): JobControlScripts => {
    let found = scripts.get(keys.base);
    if (!found) scripts.set(keys.base, (found = new JobControlScripts(client, keys, maxEvents)));
    return found;
  };
  let level = childKeys.map((childKey) => ({ childKey, parentKey }));
  while (level.length > 0) {
    const next: typeof level = [];
    for (let i = 0; i < level.length; i += CHILD_BATCH) {
      const replies = await Promise.all(level.slice(i, i + CHILD_BATCH).map(async ({ childKey, parentKey: expectedParent }) => {
        const child = parseJobKey(childKey);
        if (!child) return [];
        const { children } = await scriptsOf(child.keys).removeJob(child.id, { children: true, notifyParent: false, expectedParent });
        return children.map((grandchild) => ({ childKey: grandchild, parentKey: childKey }));
      }));
      for (const children of replies) next.push(...children);
    }
    level = next;
  }
}
