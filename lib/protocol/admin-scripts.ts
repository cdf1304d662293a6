import type { JobState, Keys } from './keys.js';
import type { RedisClient, ScriptCall } from './script.js';
import { SCRIPTS } from './script-registry.js';

/**
 * The typed bindings of a queue's queue-wide scripts: pause and resume, and the batches of clean,
 * drain, obliterate and a keep rule's trim, each bounded per call (the runtime loops over them). Like Scripts, it
 * builds each KEYS array in one place and sends no other command.
 */
export class AdminScripts {
  constructor(
    private readonly client: RedisClient,
    private readonly keys: Keys,
    private readonly maxEvents: number,
  ) {}

  /** Pauses or resumes; true when the state changed. */
  async pause(action: 'pause' | 'resume'): Promise<boolean> {
    const k = this.keys;
    const reply = await this.call({
      script: SCRIPTS.pause,
      keys: [k.wait, k.paused, k.meta, k.prioritized, k.marker, k.events],
      args: [action, this.maxEvents],
    });
    return reply === 1;
  }

  /**
   * One window of a clean (cleanJobsInSet-2): up to `limit` (0 = any number) of the jobs of
   * `state` at or before `cutoff`, among the ids from rank `fromRank` on. Returns the removed ids
   * and the rank the next window starts at, or -1 at the end of the state.
   */
  async cleanJobsInSet(state: JobState, cutoff: number, limit: number, fromRank = 0): Promise<{ removed: string[]; nextRank: number }> {
    const [removed, nextRank] = (await this.call({
      script: SCRIPTS.cleanJobsInSet,
      keys: [this.keys.state(state), this.keys.events],
      args: [this.keys.base, cutoff, limit, this.maxEvents, fromRank],
    })) as [string[], number];
    return { removed, nextRank };
  }

  /** One drain batch; returns how many jobs are left to remove. */
  async drain(withDelayed: boolean): Promise<number> {
    const k = this.keys;
    return (await this.call({
      script: SCRIPTS.drain,
      keys: [k.wait, k.paused, k.prioritized, k.delayed, k.events],
      args: [k.base, withDelayed ? '1' : '0', this.maxEvents],
    })) as number;
  }

  /** One obliterate batch: 1 done, 0 more to do, -3 refused because jobs are active. */
  async obliterate(force: boolean): Promise<number> {
    return (await this.call({
      script: SCRIPTS.obliterate,
      keys: [this.keys.meta, this.keys.active],
      args: [this.keys.base, force ? '1' : '0'],
    })) as number;
  }

  /**
   * One step of a keep rule on a finished set (trimFinished-1): at most 1000 of its oldest jobs
   * over `keepCount` (-1: no count rule) or older than `keepAgeMs` (0: no age rule) deleted with
   * their flow keys. Returns how many jobs are still over the rule (0: it holds).
   */
  async trimFinished(state: 'completed' | 'failed', keepCount: number, keepAgeMs: number, now: number): Promise<number> {
    return (await this.call({
      script: SCRIPTS.trimFinished,
      keys: [this.keys.state(state)],
      args: [this.keys.base, keepCount, keepAgeMs, now],
    })) as number;
  }

  /** One batch of removeOrphanedJobs-8: of `jobIds`, the job hashes no state holds, deleted; how many. */
  async removeOrphanedJobs(jobIds: string[]): Promise<number> {
    const k = this.keys;
    return (await this.call({
      script: SCRIPTS.removeOrphanedJobs,
      keys: [k.wait, k.paused, k.active, k.prioritized, k.delayed, k.completed, k.failed, k.waitingChildren],
      args: [k.base, ...jobIds],
    })) as number;
  }

  private call(call: ScriptCall): Promise<unknown> {
    return call.script.run(this.client, call.keys, call.args);
  }
}
