import { EchoMQOptionError } from '../protocol/errors.js';
import type { JobSchedulerDeclaration } from './echomq.interfaces.js';
import { SCHEDULER_CONTEXT, SCHEDULER_NAME_AMBIGUOUS, SCHEDULER_NAME_ELSEWHERE, SCHEDULER_NOT_ON_HANDLER } from './echomq.messages.js';

/** A @JobScheduler of a processor method, its jobs' name settled so that they reach that method. */
export interface DecoratedScheduler extends JobSchedulerDeclaration {
  method: string;
}

/** What of a processor the naming needs: its class and which method handles which job name. */
interface Handlers {
  className: string;
  queueName: string;
  handlers: ReadonlyMap<string, string>;
  defaultHandler?: string;
}

/**
 * The scheduler a @JobScheduler on `method` declares. Its jobs take the method's one @Process name
 * (the scheduler's id when the method is only the default handler), or `template.name`, which must
 * be one the method handles: the decorator sits on the method that runs the jobs, and a name the
 * dispatcher sends elsewhere would make that a lie. Refused at init (EchoMQOptionError, field
 * `template.name`). The template's other checks come at bootstrap, with every declaration's.
 */
export function decoratedScheduler(
  processor: Handlers, method: string, jobNames: ReadonlyArray<string | undefined>, declaration: JobSchedulerDeclaration,
): DecoratedScheduler {
  const { id, repeat, template } = declaration;
  if (jobNames.length === 0) throw new Error(SCHEDULER_NOT_ON_HANDLER(processor.className, method, id));
  const context = SCHEDULER_CONTEXT(id, processor.queueName, `declared by @JobScheduler on ${processor.className}.${method}`);
  const templateIsObject = typeof template === 'object' && template !== null && !Array.isArray(template);
  const given = templateIsObject ? template.name : undefined;
  let jobName: unknown = given;
  if (given === undefined) {
    const named = [...new Set(jobNames.filter((name): name is string => name !== undefined))];
    if (named.length > 1) throw new EchoMQOptionError('template.name', `${SCHEDULER_NAME_AMBIGUOUS(processor.className, method, named)} (${context})`);
    jobName = named[0] ?? id;
  }
  // A name that is no name is refused at bootstrap by the template's own check, with the others.
  if (typeof jobName === 'string' && jobName !== '') {
    const handler = processor.handlers.get(jobName) ?? processor.defaultHandler;
    if (handler !== method) {
      throw new EchoMQOptionError('template.name', `${SCHEDULER_NAME_ELSEWHERE(processor.className, method, jobName, handler)} (${context})`);
    }
  }
  const named = given === undefined && typeof jobName === 'string' && (template === undefined || templateIsObject);
  return { id, repeat, template: named ? { ...template, name: jobName as string } : template, method };
}
