/** Throw it from a processor to fail the job at once, whatever attempts it has left. */
export class UnrecoverableError extends Error {
  override readonly name = 'UnrecoverableError';
}
