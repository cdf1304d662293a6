import { EchoMQOptionError } from '../../protocol/errors.js';
import { describe } from '../../protocol/names.js';
import type { StoredScheduler } from '../../protocol/scheduler-scripts.js';
import { validateJobOptions, type JobOptions } from '../core/job-options.js';
import { toJson } from '../core/serialize.js';
import { scheduleJson, type Schedule } from './repeat-options.js';

/** Job options a scheduler's jobs take: as for add, but a scheduler fixes their ids and due times. */
export type JobSchedulerTemplateOptions = Omit<JobOptions, 'jobId' | 'delay' | 'partitionKey' | 'deduplication'>;

/** The jobs a scheduler makes: BullMQ's job template. The name defaults to the scheduler's id. */
export interface JobSchedulerTemplate<Data = unknown> {
  name?: string;
  data?: Data;
  opts?: JobSchedulerTemplateOptions;
}

const FIXED_BY_SCHEDULER = {
  jobId: "a scheduler's jobs are named repeat:<scheduler id>:<slot>, one per slot",
  delay: "a scheduler's jobs are due at their slots",
  partitionKey: "a scheduler's jobs go to the partition of the scheduler's id",
  deduplication: "a scheduler makes one job per slot itself, with scripts that take no deduplication (as in BullMQ)",
} as const;

/**
 * Checks a template and builds what upsertJobScheduler-10 stores; throws EchoMQOptionError naming
 * the field. The queue's defaultJobOptions apply, as they do to add.
 */
export function storedScheduler(
  schedulerId: string, schedule: Schedule, template: JobSchedulerTemplate | undefined,
  defaults: JobOptions, maxDataSize: number,
): StoredScheduler {
  const at = 'template';
  if (template !== undefined && (typeof template !== 'object' || template === null || Array.isArray(template))) {
    throw new EchoMQOptionError(at, `must be an object { name?, data?, opts? }, got ${describe(template)}`);
  }
  const { name = schedulerId, data, opts = {} } = template ?? {};
  if (typeof name !== 'string' || name.length === 0) throw new EchoMQOptionError(`${at}.name`, `must be a non-empty string, got ${describe(name)}`);
  if (typeof opts !== 'object' || opts === null) throw new EchoMQOptionError(`${at}.opts`, `must be an object, got ${describe(opts)}`);
  for (const [option, why] of Object.entries(FIXED_BY_SCHEDULER)) {
    if ((opts as Record<string, unknown>)[option] !== undefined) throw new EchoMQOptionError(`${at}.opts.${option}`, `cannot be set: ${why}`);
  }
  validateJobOptions(opts as JobOptions, `${at}.opts.`);
  const { jobId: _jobId, delay: _delay, partitionKey: _key, ...merged } = { ...defaults, ...opts } as JobOptions;
  return {
    repeat: scheduleJson(schedule),
    name,
    data: toJson(data, `${at}.data`, maxDataSize),
    opts: JSON.stringify(merged),
    priority: merged.priority ?? 0,
    lifo: merged.lifo === true,
    limit: schedule.limit ?? 0,
  };
}
