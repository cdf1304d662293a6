// Counts what a run processed, to check it: every job exactly once, none lost.
import { CheckFailed } from './measure.mjs';

/** Which of `total` jobs (numbered by data.i) a handler ran, and how many finished. */
export class Tally {
  constructor(total) {
    this.total = total;
    this.runs = new Uint8Array(total);
    this.duplicates = 0;
    this.finished = 0;
    this.done = new Promise((resolve) => (this.resolveDone = resolve));
  }

  /** Called by the handler when a job starts. */
  ran(i) {
    if (this.runs[i]++ > 0) this.duplicates++;
  }

  /** Called on the worker's `completed` event. */
  completed() {
    if (++this.finished === this.total) this.resolveDone();
  }

  /** Resolves when all jobs finished; rejects with CheckFailed after `timeoutMs`. */
  async whenDone(timeoutMs) {
    let timer;
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new CheckFailed(`only ${this.finished} of ${this.total} jobs finished in ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      await Promise.race([this.done, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** The jobs that never ran, and how many ran more than once. */
  problems() {
    let missing = 0;
    for (const count of this.runs) if (count === 0) missing++;
    return { missing, duplicates: this.duplicates };
  }
}
