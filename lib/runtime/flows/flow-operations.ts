import type { FlowOperations } from '../job/job-context.js';
import { removeJobOfFlow } from './flow-removal.js';
import { moveJobToWaitingChildren } from './step-jobs.js';

/**
 * The port job/job-context.ts names, implemented: what a Job of any queue reaches of flows/
 * through its context. One object for the process; every context built above job/ carries it.
 */
export const FLOW_OPERATIONS: FlowOperations = {
  remove: removeJobOfFlow,
  moveToWaitingChildren: moveJobToWaitingChildren,
};
