import { EchoMQOptionError } from '../protocol/errors.js';
import { describe } from '../protocol/names.js';
import { sandboxSpec } from '../runtime/sandbox/sandbox-options.js';
import type { ProcessorSandbox } from './echomq.interfaces.js';

/** The Worker option behind each field of @Processor's `sandbox`, for the refusals' field names. */
const FIELDS: Record<string, string> = { processorFile: 'sandbox.file', useWorkerThreads: 'sandbox.useWorkerThreads', sandboxGracePeriod: 'sandbox.gracePeriod' };

/** The name a refusal of sandboxSpec gives its field under @Processor's `sandbox`. */
function sandboxField(field: string): string {
  return FIELDS[field] ?? (field.startsWith('workerThreadsOptions') ? `sandbox.${field}` : field);
}

/**
 * Checks a @Processor's `sandbox` at module init, as its Worker will (the file exists, the options
 * are right), so a bad one fails the app's init rather than its bootstrap. EchoMQOptionError names
 * `sandbox.file`, `sandbox.useWorkerThreads`, `sandbox.gracePeriod` or `sandbox.workerThreadsOptions`
 * (and its field), and the class.
 */
export function checkSandbox(className: string, sandbox: ProcessorSandbox): void {
  if (typeof sandbox !== 'object' || sandbox === null) {
    throw new EchoMQOptionError('sandbox', `processor ${className}: must be an object { file, useWorkerThreads?, gracePeriod?, workerThreadsOptions? }, got ${describe(sandbox)}`);
  }
  try {
    sandboxSpec(sandbox.file, { useWorkerThreads: sandbox.useWorkerThreads, sandboxGracePeriod: sandbox.gracePeriod, workerThreadsOptions: sandbox.workerThreadsOptions });
  } catch (error) {
    if (!(error instanceof EchoMQOptionError)) throw error;
    const field = sandboxField(error.field);
    throw new EchoMQOptionError(field, `processor ${className}: ${error.message.slice(error.field.length + 2)}`);
  }
}
