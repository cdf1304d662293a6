import { Periodic } from '../core/periodic.js';

/** What a WorkerLocks needs of its timer: run while it holds jobs, stop when it holds none. */
export interface HeartbeatTimer {
  readonly active: boolean;
  /** This member holds jobs: the timer must run. */
  start(): void;
  /** This member holds none (or closed): the timer may stop. Waits for a tick in flight. */
  stop(): Promise<void>;
}

/** One tick of one member: renews what it holds (nothing when it holds nothing). */
export type MemberTick = (lateByMs: number) => Promise<void>;

/**
 * A worker's one heartbeat timer. A plain queue's worker has one member (its WorkerLocks); a
 * partitioned queue's has one per partition (each partition's renewals are calls to its own slot,
 * so each member keeps its own tick), and the LockManager's rule of one timer per worker still
 * holds. Each firing ticks every member that holds jobs, at once; the timer runs while any does.
 */
export class SharedHeartbeat {
  private readonly periodic: Periodic;
  private readonly members: Array<{ tick: MemberTick; busy: boolean; current?: Promise<void> }> = [];

  constructor(intervalMs: number) {
    // Each member reports what its own tick throws (WorkerLocks.tickFailed): nothing reaches onError.
    this.periodic = new Periodic(intervalMs, async (lateBy) => {
      await Promise.all(this.members.filter((member) => member.busy).map((member) => {
        const current = member.tick(lateBy).finally(() => {
          if (member.current === current) member.current = undefined;
        });
        member.current = current;
        return current;
      }));
    }, () => undefined);
  }

  /** A member's view of the timer. */
  join(tick: MemberTick): HeartbeatTimer {
    const member: { tick: MemberTick; busy: boolean; current?: Promise<void> } = { tick, busy: false };
    this.members.push(member);
    const shared = this;
    return {
      get active() {
        return shared.periodic.active;
      },
      start() {
        member.busy = true;
        shared.periodic.start();
      },
      async stop() {
        member.busy = false;
        if (shared.members.every((m) => !m.busy)) await shared.periodic.stop();
        else await member.current; // its own tick in flight, not the others'
      },
    };
  }
}
