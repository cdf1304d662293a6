import type { JobState } from '../../protocol/keys.js';

/** bull-board's status names (its STATUSES, less `latest`): BullMQ's, where our `wait` is `waiting`. */
export type BoardStatus = 'active' | 'waiting' | 'waiting-children' | 'prioritized' | 'completed' | 'failed' | 'delayed' | 'paused';

/** Every state of ours under bull-board's name, in the order the board shows its tabs. */
export const BOARD_STATUSES: ReadonlyArray<readonly [BoardStatus, JobState]> = [
  ['active', 'active'],
  ['waiting', 'wait'],
  ['waiting-children', 'waiting-children'],
  ['prioritized', 'prioritized'],
  ['completed', 'completed'],
  ['failed', 'failed'],
  ['delayed', 'delayed'],
  ['paused', 'paused'],
];

const TO_STATE = new Map<string, JobState>(BOARD_STATUSES.map(([status, state]) => [status, state]));

/** Our state for a status the board sends; undefined for one we do not have (`latest` is the board's list of all). */
export function stateOfStatus(status: string): JobState | undefined {
  return TO_STATE.get(status) ?? (status === 'wait' ? 'wait' : undefined);
}

