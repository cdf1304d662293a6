/**
 * A Worker's close() found Redis silent for its closeTimeout (no answer to a PING): the worker gave
 * up what was left as close(true) does. Emitted as the worker's 'error'; it names
 * what the close was waiting for and the jobs it gave up.
 */
export class CloseTimeoutError extends Error {
  override readonly name = 'CloseTimeoutError';

  constructor(
    readonly queue: string,
    readonly workerId: string,
    readonly closeTimeout: number,
    /** What the close was still waiting for when the time ran out. */
    readonly waitingFor: string,
    /** The jobs it ran and gave up: their locks lapse, then a stalled sweep hands them to another worker. */
    readonly jobIds: string[],
  ) {
    const jobs = jobIds.length === 0 ? 'no running job' : `${jobIds.length} running job(s) (${jobIds.join(', ')})`;
    super(
      `worker ${workerId} of queue ${queue} could not close: Redis answered nothing for closeTimeout (${closeTimeout} ms) while it waited for ${waitingFor}; ` +
        `it gave up ${jobs} as close(true) does (signals aborted, locks left to lapse so another worker retries them), ` +
        'stopped its heartbeat and stalled sweep without waiting for Redis, and dropped its connections',
    );
  }
}
