/** Throw it from a processor to fail the job at once, whatever attempts it has left. */
export class UnrecoverableError extends Error {
  override readonly name = 'UnrecoverableError';
}

/** An UnrecoverableError, also one of another copy of the library (told by its name, as BullMQ does). */
export function isUnrecoverableError(error: unknown): boolean {
  return error instanceof UnrecoverableError || (error instanceof Error && error.name === 'UnrecoverableError');
}
