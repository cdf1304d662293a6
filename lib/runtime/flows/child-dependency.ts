import { FlowScripts } from '../../protocol/flow-scripts.js';
import { DEFAULTS } from '../core/defaults.js';
import type { JobContext } from '../job/job-context.js';
import { parseJobKey } from './parent-notices.js';

/**
 * job.removeChildDependency (BullMQ's name): a child leaves its parent before it finishes. Its
 * parent forgets it first, as a removed child (settleChildren-12 with policy remove), and starts if
 * it waited for nothing else; only then does its link go (HDEL of parentKey, parent and pfp in the
 * child's hash). A finish between the two, or after a death between them, sends a notice the
 * parent no longer waits for: a settle of a child that is no dependency changes nothing. True
 * when the child had a parent that still waited for it; otherwise nothing changed.
 */
export async function removeChildDependency(context: JobContext, jobId: string, parentKey: string | undefined): Promise<boolean> {
  const parent = parentKey === undefined ? undefined : parseJobKey(parentKey);
  if (!parent) return false;
  const childKey = context.keys.job(jobId);
  const scripts = new FlowScripts(context.client, parent.keys, context.maxEvents ?? DEFAULTS.maxEvents);
  const { codes } = await scripts.settleChildren([{ parentId: parent.id, childKey, outcome: 'failed', value: 'the dependency was removed', policy: 'remove' }], Date.now());
  if (codes[0] !== 1) return false; // not a dependency (settled already, or another parent's): the link stays as it is
  await context.client.hdel(childKey, 'parentKey', 'parent', 'pfp');
  return true;
}
