import { codeMeaning } from '../../protocol/codes.js';

/** Why a job's signal was aborted: its lock lapsed (-2) or another token holds it (-6). */
export class LockLostError extends Error {
  override readonly name = 'LockLostError';
  constructor(readonly queue: string, readonly jobId: string, readonly code: -2 | -6, detail = codeMeaning(code)) {
    super(`lost the lock of job ${jobId} in queue ${queue}: ${detail}; its result will not be reported`);
  }
}
