import type { FlowOperations } from '../job/job-context.js';
import { removeJobOfFlow } from './flow-removal.js';
import { moveJobToWaitingChildren } from './step-jobs.js';
import { removeChildDependency } from './child-dependency.js';
import { ParentNotices } from './parent-notices.js';
import { DEFAULTS } from '../core/defaults.js';

/**
 * The port job/job-context.ts names, implemented: what a Job of any queue reaches of flows/
 * through its context. One object for the process; every context built above job/ carries it.
 */
export const FLOW_OPERATIONS: FlowOperations = {
  remove: removeJobOfFlow,
  moveToWaitingChildren: moveJobToWaitingChildren,
  removeChildDependency,
  deliverNotice: (context, jobId) =>
    // What the settle starts further up the tree goes on in the background, its errors left to the sweep.
    new ParentNotices(context.client, context.keys, context.maxEvents ?? DEFAULTS.maxEvents, () => undefined, 0).deliverStored([jobId]),
};
