import { EchoMQOptionError } from '../protocol/errors.js';
import { describe } from '../protocol/names.js';
import { sandboxSpec } from '../runtime/sandbox/sandbox-options.js';
import type { ProcessorSandbox } from './echomq.interfaces.js';

/** The Worker option behind each field of @Processor's `sandbox`, for the refusals' field names. */
const FIELDS: Record<string, string> = { processorFile: 'sandbox.file', useWorkerThreads: 'sandbox.useWorkerThreads', sandboxGracePeriod: 'sandbox.gracePeriod' };

/**
 * Checks a @Processor's `sandbox` at module init, as its Worker will (the file exists, the options
 * are right), so a bad one fails the app's init rather than its bootstrap. EchoMQOptionError names
 * `sandbox.file`, `sandbox.useWorkerThreads` or `sandbox.gracePeriod` and the class.
 */
export function checkSandbox(className: string, sandbox: ProcessorSandbox): void {
  if (typeof sandbox !== 'object' || sandbox === null) {
    throw new EchoMQOptionError('sandbox', `processor ${className}: must be an object { file, useWorkerThreads?, gracePeriod? }, got ${describe(sandbox)}`);
  }
  try {
    sandboxSpec(sandbox.file, { useWorkerThreads: sandbox.useWorkerThreads, sandboxGracePeriod: sandbox.gracePeriod });
  } catch (error) {
    if (!(error instanceof EchoMQOptionError)) throw error;
    const field = FIELDS[error.field] ?? error.field;
    throw new EchoMQOptionError(field, `processor ${className}: ${error.message.slice(error.field.length + 2)}`);
  }
}
