/**
 * Throw it from a processor right after `await job.moveToWaitingChildren(token)` answered true:
 * the job now waits for its children, so the worker neither completes nor fails it (BullMQ's
 * name). It runs again, from the start, once its children have settled. Thrown without that move,
 * it is an ordinary failure.
 */
export class WaitingChildrenError extends Error {
  override readonly name = 'WaitingChildrenError';

  constructor(message = 'the job was moved to waiting-children by its handler') {
    super(message);
  }
}

/** A WaitingChildrenError, also one of another copy of the library (told by its name, as BullMQ does). */
export function isWaitingChildrenError(error: unknown): boolean {
  return error instanceof WaitingChildrenError || (error instanceof Error && error.name === 'WaitingChildrenError');
}
