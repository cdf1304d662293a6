import { Script } from './script.js';

/** Jobs per addJobs-9 call: large enough to amortise a script call, small enough to keep one short. */
export const ADD_BATCH = 500;

/** Every script of `lua/`, one instance each for the process: read and hashed once. */
export const SCRIPTS = {
  addJob: new Script('addJob', 9),
  addJobs: new Script('addJobs', 9),
  addJobsDedup: new Script('addJobsDedup', 9),
  getDeduplicationJobId: new Script('getDeduplicationJobId', 1),
  freeDeduplication: new Script('freeDeduplication', 1),
  moveToActive: new Script('moveToActive', 11),
  moveToActiveBounded: new Script('moveToActiveBounded', 11),
  moveToFinished: new Script('moveToFinished', 14),
  finishJobs: new Script('finishJobs', 13),
  finishJobsBounded: new Script('finishJobsBounded', 13),
  moveJobFromActiveToWait: new Script('moveJobFromActiveToWait', 11),
  retryJob: new Script('retryJob', 12),
  extendLock: new Script('extendLock', 2),
  extendLocks: new Script('extendLocks', 1),
  moveStalledJobsToWait: new Script('moveStalledJobsToWait', 8),
  pause: new Script('pause', 6),
  updateProgress: new Script('updateProgress', 2),
  addLog: new Script('addLog', 2),
  removeJob: new Script('removeJob', 14),
  reprocessJob: new Script('reprocessJob', 9),
  cleanJobsInSet: new Script('cleanJobsInSet', 2),
  drain: new Script('drain', 5),
  obliterate: new Script('obliterate', 2),
  trimFinished: new Script('trimFinished', 1),
  removeOrphanedJobs: new Script('removeOrphanedJobs', 8),
  upsertJobScheduler: new Script('upsertJobScheduler', 10),
  startSchedulerJob: new Script('startSchedulerJob', 14),
  repairJobScheduler: new Script('repairJobScheduler', 12),
  removeJobScheduler: new Script('removeJobScheduler', 7),
  // Job control (bindings in job-control-scripts.ts).
  updateData: new Script('updateData', 1),
  changeDelay: new Script('changeDelay', 4),
  changePriority: new Script('changePriority', 8),
  promote: new Script('promote', 9),
  moveToDelayed: new Script('moveToDelayed', 7),
  retryJobs: new Script('retryJobs', 8),
  promoteJobs: new Script('promoteJobs', 8),
  // Cancels (queue.cancelJob; docs/protocol.md, "Cancelling jobs").
  cancelJob: new Script('cancelJob', 12),
  cancelledAmong: new Script('cancelledAmong', 1),
  // Flows (bindings in flow-scripts.ts; docs/protocol.md, "Flows").
  addFlowJobs: new Script('addFlowJobs', 15),
  ackNotices: new Script('ackNotices', 2),
  ackFlowPending: new Script('ackFlowPending', 2),
  finishFlowJob: new Script('finishFlowJob', 8),
  finishFlowJobs: new Script('finishFlowJobs', 15),
  settleChildren: new Script('settleChildren', 12),
  addDependency: new Script('addDependency', 4),
  moveToWaitingChildren: new Script('moveToWaitingChildren', 7),
  // Metrics of workers with `metrics` (bindings in metrics.ts; docs/protocol.md, "Metrics").
  recordMetrics: new Script('recordMetrics', 2),
} as const;

export type ScriptName = keyof typeof SCRIPTS;
