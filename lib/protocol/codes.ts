/**
 * The closed set of script return codes (PROTOCOL.md) and the typed error each becomes.
 * -4, -5 and -7 upward are reserved for later features.
 */
export const ErrorCode = {
  JobNotExist: -1,
  JobLockNotExist: -2,
  JobNotInState: -3,
  JobLockMismatch: -6,
} as const;

export type ErrorCodeValue = (typeof ErrorCode)[keyof typeof ErrorCode];

const CODE_NAMES: Record<number, keyof typeof ErrorCode> = {
  [-1]: 'JobNotExist',
  [-2]: 'JobLockNotExist',
  [-3]: 'JobNotInState',
  [-6]: 'JobLockMismatch',
};

const CODE_MEANINGS: Record<number, string> = {
  [-1]: 'the job does not exist (no job hash)',
  [-2]: 'the job has no lock: it lapsed, so this worker no longer owns the job',
  [-3]: 'the job is not in the state this operation expects',
  [-6]: 'the job\'s lock is held by another token: another worker owns the job now',
};

/** The name of a protocol code, e.g. `JobLockNotExist` for -2. */
export function codeName(code: number): string {
  return CODE_NAMES[code] ?? `UnknownCode(${code})`;
}

/** A protocol code in words. */
export function codeMeaning(code: number): string {
  return CODE_MEANINGS[code] ?? `unknown return code ${code}`;
}

/** True for a code the protocol defines as an error (any negative integer). */
export function isErrorCode(reply: unknown): reply is number {
  return typeof reply === 'number' && reply < 0;
}
