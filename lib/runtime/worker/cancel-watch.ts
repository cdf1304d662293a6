import type { WorkerLocks } from '../locks/worker-locks.js';

/** What a CancelWatch needs of a lane's locks. */
export type CancelWatchLocks = Pick<WorkerLocks, 'idsAcquiredBy' | 'cancelMarked'>;

/**
 * A worker's side of queue.cancelJob, from any process (docs/protocol.md, "Cancelling jobs").
 * cancelJob-12 marks a job a worker holds and increments the queue's `cancels` counter, a field of
 * meta that the heartbeat reads in the HMGET it sends anyway: nothing more is sent while nobody
 * cancels. When a tick reads a count other than the last one, each lane holding jobs asks Redis
 * (cancelledAmong-1, WorkerLocks.cancelMarked) which of them are marked, and cancels those.
 *
 * Which jobs a look must cover, by causality: a count read at time T counts every mark made before
 * the HMGET ran, so a pickup sent after T (this process's clock) ran after it and carries any such
 * mark itself (the runner fails that job at once). The jobs to look at are those whose pickup was
 * sent at or before T, and each once per count: also those tracked after the look at T, a pickup
 * whose reply was still on its way then (the next tick finds them). A look that failed is made
 * again at the next tick.
 */
export class CancelWatch {
  /** The count last read; undefined before the first reading. */
  private count?: string;
  /** When it was read (the tick's reply, by this process's clock). */
  private readAt = 0;
  /** Per lane: the jobs looked at (or being looked at) since the count last changed. */
  private readonly covered = new Map<CancelWatchLocks, Set<string>>();

  constructor(
    private readonly lanes: readonly CancelWatchLocks[],
    private readonly onError: (error: Error) => void,
  ) {}

  /** A tick (or the worker's start) read `count` (the meta field, null when never set) at `at`. */
  read(count: string | null, at = Date.now()): void {
    const value = count ?? '0';
    if (value !== this.count) {
      this.count = value;
      this.readAt = at;
      this.covered.clear();
    }
    for (const locks of this.lanes) {
      // In the steady state (no count changed since these jobs were taken) this finds none.
      const due = locks.idsAcquiredBy(this.readAt);
      let covered = this.covered.get(locks);
      if (!covered) {
        if (due.length === 0) continue;
        this.covered.set(locks, (covered = new Set()));
      }
      const held = new Set(due);
      for (const id of covered) if (!held.has(id)) covered.delete(id);
      const look = due.filter((id) => !covered.has(id));
      if (look.length > 0) this.look(locks, look, covered);
    }
  }

  private look(locks: CancelWatchLocks, ids: string[], covered: Set<string>): void {
    for (const id of ids) covered.add(id);
    locks.cancelMarked(ids).catch((error: Error) => {
      for (const id of ids) covered.delete(id);
      this.onError(error);
    });
  }
}
