import { isErrorCode } from './codes.js';
import { EchoMQError } from './errors.js';
import type { Keys } from './keys.js';
import { Script, type RedisClient } from './script.js';
import type { ScriptArg } from './script-command.js';
import { SCRIPTS } from './script-registry.js';

/**
 * The KEYS that the job scheduler scripts open with, in the order `lua-src/includes/schedulerKeys.lua`
 * reads them; the scheduler's own hash (KEYS[2]) is put in by `keysOf`.
 */
const SCHEDULER_KEYS = ['schedulers', 'scheduler', 'wait', 'paused', 'meta', 'delayed', 'prioritized', 'pc', 'marker', 'events'] as const;

/** What upsertJobScheduler-10 stores: the schedule and the template of every job it makes. */
export interface StoredScheduler {
  /** The schedule as JSON; the runtime computes slots from it, and compares it to tell a change. */
  repeat: string;
  name: string;
  data: string;
  opts: string;
  priority: number;
  lifo: boolean;
  /** 0 = none. */
  limit: number;
}

/** A scheduler's next two slots (ms); `second` is undefined when the schedule has one slot left. */
export interface SlotPair {
  first: number;
  second?: number;
}

/** What startSchedulerJob-14 decided: run the handler, or the job was skipped (removed: a later slot's job stands for it). */
export type StartVerdict = 'run' | 'skipped';

/**
 * The typed bindings of a queue's job scheduler scripts (docs/protocol.md, "Job schedulers").
 * Like Scripts, it builds each KEYS array in one place and sends no other command.
 */
export class SchedulerScripts {
  constructor(
    private readonly client: RedisClient,
    private readonly keys: Keys,
    private readonly maxEvents: number,
  ) {}

  /**
   * Creates or replaces a scheduler with its first two slots (undefined: the schedule has none,
   * its endDate passed); returns its next slot (undefined when it has none: it ended) and whether
   * anything changed.
   */
  async upsert(schedulerId: string, stored: StoredScheduler, slots: SlotPair | undefined, now: number): Promise<{ next?: number; changed: boolean }> {
    const args: ScriptArg[] = [this.keys.base, schedulerId, stored.repeat, stored.name, stored.data, stored.opts,
      stored.priority, stored.lifo ? '1' : '0', stored.limit, slots?.first ?? '', slots?.second ?? '', now, this.maxEvents];
    const [next, changed] = (await this.run(SCRIPTS.upsertJobScheduler, this.keysOf(schedulerId), args)) as [string, number];
    return { next: next === '' ? undefined : Number(next), changed: changed === 1 };
  }

  /**
   * The step between the pickup of a scheduler's job (held under `token`) and its handler: run it,
   * or it was skipped; `slots` are the two after max(now, its slot) (undefined: the schedule has
   * none left). Throws EchoMQError -1/-2/-6.
   */
  async start(schedulerId: string, jobId: string, slot: number, token: string, slots: SlotPair | undefined, now: number): Promise<StartVerdict> {
    const k = this.keys;
    const reply = await this.run(SCRIPTS.startSchedulerJob, [...this.keysOf(schedulerId), k.active, k.stalled, k.job(jobId), k.lock(jobId)],
      [k.base, schedulerId, slot, token, slots?.first ?? '', slots?.second ?? '', now, this.maxEvents]);
    if (isErrorCode(reply)) throw new EchoMQError(reply, jobId, SCRIPTS.startSchedulerJob.fileName);
    return reply === 1 ? 'run' : 'skipped';
  }

  /** Restarts a scheduler of generation `gen` whose next two jobs are gone or finished; true when it did. */
  async repair(schedulerId: string, gen: string, slots: SlotPair | undefined, now: number): Promise<boolean> {
    const k = this.keys;
    const reply = await this.run(SCRIPTS.repairJobScheduler, [...this.keysOf(schedulerId), k.completed, k.failed],
      [k.base, schedulerId, gen, slots?.first ?? '', slots?.second ?? '', now, this.maxEvents]);
    return reply === 1;
  }

  /** Removes a scheduler and its next job unless that job has started; false when there was none. */
  async remove(schedulerId: string): Promise<boolean> {
    const k = this.keys;
    const reply = await this.run(SCRIPTS.removeJobScheduler,
      [k.schedulers, k.scheduler(schedulerId), k.delayed, k.wait, k.paused, k.prioritized, k.events],
      [k.base, schedulerId, this.maxEvents]);
    return reply === 1;
  }

  private keysOf(schedulerId: string): string[] {
    return SCHEDULER_KEYS.map((name) => (name === 'scheduler' ? this.keys.scheduler(schedulerId) : this.keys[name]));
  }

  private run(script: Script, keys: string[], args: ScriptArg[]): Promise<unknown> {
    return script.run(this.client, keys, args);
  }
}
