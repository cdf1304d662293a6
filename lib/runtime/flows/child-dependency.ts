import { FlowScripts } from '../../protocol/flow-scripts.js';
import { DEFAULTS } from '../core/defaults.js';
import type { JobContext } from '../job/job-context.js';
import { parseJobKey } from './parent-notices.js';

/**
 * job.removeChildDependency (BullMQ's name): a child leaves its parent before it finishes. Its
 * link goes first (HDEL of parentKey, parent and pfp in the child's hash: a finish after it tells
 * no parent), then its parent forgets it as a removed child (settleChildren-12 with policy
 * remove), and starts if it waited for nothing else. A process that dies between the two leaves
 * the parent waiting for a child that no longer names it: the flow backstop lets it go.
 * True when the child had a parent that still waited for it.
 */
export async function removeChildDependency(context: JobContext, jobId: string, parentKey: string | undefined): Promise<boolean> {
  const parent = parentKey === undefined ? undefined : parseJobKey(parentKey);
  if (!parent) return false;
  const childKey = context.keys.job(jobId);
  if ((await context.client.hdel(childKey, 'parentKey', 'parent', 'pfp')) === 0) return false;
  const scripts = new FlowScripts(context.client, parent.keys, context.maxEvents ?? DEFAULTS.maxEvents);
  const { codes } = await scripts.settleChildren([{ parentId: parent.id, childKey, outcome: 'failed', value: 'the dependency was removed', policy: 'remove' }], Date.now());
  return codes[0] === 1;
}
