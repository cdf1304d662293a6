import type { RepeatOptions } from '../../runtime/schedulers/repeat-options.js';
import type { JobSchedulerTemplate } from '../../runtime/schedulers/template.js';
import { JOB_SCHEDULER_METADATA } from '../echomq.constants.js';
import type { JobSchedulerDeclaration } from '../echomq.interfaces.js';
import { appendMetadata } from './process.decorator.js';

/**
 * Declares a job scheduler whose jobs this @Process method runs, with Queue.upsertJobScheduler's
 * arguments: `@JobScheduler('nightly-report', { pattern: '0 3 * * *', tz: 'Europe/Paris' })`.
 * Its jobs take the method's @Process name unless `template.name` gives another of its names.
 * Upserted once at bootstrap, before the workers start; never removed by a shutdown (docs/nest.md).
 * Stack it for several schedules on one method.
 */
export function JobScheduler<Data = unknown>(id: string, repeat: RepeatOptions, template?: JobSchedulerTemplate<Data>): MethodDecorator {
  return (_target, _key, descriptor) => {
    const declaration: JobSchedulerDeclaration<Data> = template === undefined ? { id, repeat } : { id, repeat, template };
    appendMetadata(JOB_SCHEDULER_METADATA, descriptor.value as object, declaration);
    return descriptor;
  };
}
