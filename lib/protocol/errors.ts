import { codeMeaning, codeName } from './codes.js';

/**
 * A script answered with a protocol error code (-1, -2, -3, -6). It names the code, the job and
 * the script, and says in words what happened.
 */
export class EchoMQError extends Error {
  override readonly name = 'EchoMQError';
  /** The symbolic name of the code, e.g. `JobLockMismatch`. */
  readonly codeName: string;

  constructor(
    readonly code: number,
    readonly jobId: string,
    readonly script: string,
    context?: string,
  ) {
    super(
      `${script} refused job ${jobId}: ${codeMeaning(code)} (${codeName(code)}, ${code})` +
        (context ? `; ${context}` : ''),
    );
    this.codeName = codeName(code);
  }
}

/**
 * An argument or option was refused before anything was sent to Redis. `field` names what was
 * wrong, and the message says why and what is accepted instead.
 */
export class EchoMQOptionError extends TypeError {
  override readonly name = 'EchoMQOptionError';

  constructor(readonly field: string, message: string) {
    super(`${field}: ${message}`);
  }
}
