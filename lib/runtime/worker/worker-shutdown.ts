import { CloseTimeoutError } from '../core/close-timeout-error.js';
import { Sleeper } from '../core/sleeper.js';
import type { LockManager } from '../locks/lock-manager.js';
import type { SandboxPool } from '../sandbox/sandbox-pool.js';
import type { FetchLoop } from './fetch-loop.js';
import type { JobSource } from './job-source.js';
import type { MetricsRecorder } from './metrics-recorder.js';
import { redisSilentFor } from './redis-silence.js';
import type { RunSlots } from './run-slots.js';
import type { WorkerConnections } from './worker-connections.js';
import type { WorkerLane } from './worker-lane.js';
import type { WorkerPresence } from './worker-presence.js';

/** Everything of a worker that its close stops, in the order drain() stops it. */
export interface ClosingParts {
  readonly workerId: string;
  readonly queueName: string;
  readonly closeTimeout: number;
  readonly lanes: readonly WorkerLane[];
  readonly source: JobSource;
  readonly loop: FetchLoop;
  readonly slots?: RunSlots;
  readonly sandbox?: SandboxPool;
  readonly sleeper: Sleeper;
  readonly lockManager: LockManager;
  readonly ownsLockManager: boolean;
  readonly presence: WorkerPresence;
  readonly metrics?: MetricsRecorder;
  readonly connections: WorkerConnections;
  reportError(error: Error): void;
}

/**
 * A worker's close: the orderly drain (stop fetching, wait for the running jobs, then stop the
 * sweep, the heartbeat and the connections), bounded by closeTimeout; close(true) gives the
 * running jobs up instead of waiting for them.
 */
export class WorkerShutdown {
  /** close(true), or closeTimeout ran out: running jobs are given up, not waited for. */
  forced = false;
  /** What the close waits for now, named by a CloseTimeoutError if the time runs out. */
  private step = 'nothing';

  constructor(private readonly parts: ClosingParts) {}

  /** close(true): from now on nothing waits for the running jobs; `closing`: a drain already waits for them. */
  force(closing: boolean): void {
    if (this.forced) return;
    this.forced = true;
    if (closing) this.giveUpJobs(this.forcedCloseReason());
  }

  /** Drains within closeTimeout, or abandons what is left. `loopDone`: the fetch loop, if it ever ran. */
  async run(loopDone: Promise<void> | undefined): Promise<void> {
    const probe = new Sleeper();
    let done = false;
    const drained = this.drain(loopDone).then(() => true, (error: Error) => {
      this.parts.reportError(error);
      return true;
    });
    const { closeTimeout, connections } = this.parts;
    const silent = Number.isFinite(closeTimeout)
      ? redisSilentFor(connections.client, closeTimeout, probe, () => done).then((silentTooLong) => !silentTooLong)
      : new Promise<boolean>(() => undefined);
    const inTime = await Promise.race([drained, silent]);
    done = true;
    probe.wake();
    if (!inTime) this.abandon();
  }

  /** The orderly close: each step may wait on Redis, which is why run() bounds it. */
  private async drain(loopDone: Promise<void> | undefined): Promise<void> {
    const { lanes, loop, sleeper, sandbox, presence, metrics } = this.parts;
    for (const lane of lanes) lane.finisher.flush(); // finishes of this turn go now, not after the connection closed
    // Jobs held ahead that have not started go back to wait; close(true) gives them up as it gives up the running ones.
    if (!this.forced) this.parts.slots?.close();
    this.parts.source.interrupt();
    if (this.forced) this.giveUpJobs(this.forcedCloseReason());
    this.step = 'the fetch loop (its moveToActive call)';
    await loopDone;
    this.step = 'its running jobs to end';
    while (!this.forced && loop.running > 0) await sleeper.sleep(Infinity);
    this.step = 'its sandboxes to exit';
    await sandbox?.close(this.forced);
    this.step = 'the stalled sweep to stop';
    await Promise.all(lanes.map((lane) => lane.sweeper.stop()));
    // Left undelivered they would wait for a sweep (docs/flows.md): their parents hear now.
    this.step = 'the notices of finished children to reach their parents';
    if (!this.forced) await Promise.all(lanes.map((lane) => lane.notices.drain()));
    this.step = 'the heartbeat to stop (a renewal in flight)';
    await Promise.all(lanes.map((lane) => lane.locks.close()));
    if (this.parts.ownsLockManager) await this.parts.lockManager.close();
    // After the heartbeat stopped, so no tick in flight writes the entry back.
    this.step = 'its registry entry to go';
    await presence.leave().catch((error: Error) => this.parts.reportError(error));
    this.step = 'its last metrics to be sent';
    await metrics?.close();
    this.step = 'its connection to close';
    for (const lane of lanes) lane.detach();
    await this.parts.connections.close();
  }

  /** Why a close(true) aborts a running job's signal. */
  private forcedCloseReason(): Error {
    return new Error(`worker ${this.parts.workerId} closed without waiting for its jobs`);
  }

  /** Aborts every running job's signal; the waits that wait for those jobs end now. */
  private giveUpJobs(reason: Error): void {
    for (const lane of this.parts.lanes) lane.locks.abortAll(reason);
    void this.parts.sandbox?.close(true); // after the aborts: their jobs reject with the signal's reason
    this.parts.sleeper.wake();
  }

  /**
   * closeTimeout ran out: the rest of drain() is left to settle whenever Redis answers (or never).
   * Jobs, heartbeat, sweep and connections are given up now, without a word to Redis.
   */
  private abandon(): void {
    const { lanes, queueName, workerId, closeTimeout } = this.parts;
    const held = lanes.flatMap((lane) => lane.locks.jobIds);
    const error = new CloseTimeoutError(queueName, workerId, closeTimeout, this.step, held);
    this.forced = true;
    this.giveUpJobs(error);
    for (const lane of lanes) {
      lane.locks.abandon();
      lane.detach();
      void lane.sweeper.stop();
    }
    if (this.parts.ownsLockManager) void this.parts.lockManager.close();
    this.parts.connections.drop();
    this.parts.reportError(error);
  }
}
