import { ATTRIBUTES, MESSAGING_SYSTEM, recordFailure } from './attributes.js';
import { runWithin } from './guarded-context.js';
import { SpanKind, type Attributes, type Telemetry } from '../core/telemetry.js';

/** What one add is, for its span: the operation, the queue (when one), attributes known before it runs. */
export interface AddDescription {
  /** `add`, `addBulk` (a Queue's), `addFlow`, `addFlows` (a FlowProducer's). */
  operation: string;
  /** The queue the jobs go to; undefined when a batch goes to several. */
  destination: string | undefined;
  attributes?: Attributes;
}

/**
 * One PRODUCER span around an add: `add(metadata)` runs with the span active, `metadata` being the
 * span's context as the jobs carry it (opts.telemetry.metadata), so each attempt's CONSUMER span
 * is its child, in whatever process runs it. `describeResult` adds what the add learned (the id).
 * Called only when a `telemetry` is given: without one, adds never come here.
 *
 * A Telemetry that throws before the add is sent rejects the add, nothing written. Once the add
 * is sent, nothing it throws changes the add's answer: a caller told "failed" about jobs that were
 * written would add them again. A Queue or a FlowProducer has no 'error' channel to report on, so
 * those throws are dropped (the span may be left incomplete, or not exported).
 */
export async function traceAdd<T>(
  telemetry: Telemetry, description: AddDescription, add: (metadata: string) => Promise<T>, describeResult?: (result: T) => Attributes,
): Promise<T> {
  const { tracer, contextManager } = telemetry;
  const { operation, destination } = description;
  const active = contextManager.active();
  const span = tracer.startSpan(destination === undefined ? operation : `${operation} ${destination}`, { kind: SpanKind.PRODUCER }, active);
  let context: unknown;
  let metadata: string;
  try {
    span.setAttributes({
      [ATTRIBUTES.system]: MESSAGING_SYSTEM,
      [ATTRIBUTES.operationType]: 'send',
      [ATTRIBUTES.operationName]: operation,
      [ATTRIBUTES.destination]: destination,
      ...description.attributes,
    });
    context = span.setSpanOnContext(active);
    metadata = contextManager.getMetadata(context);
  } catch (error) {
    ignoreThrow(() => span.end());
    throw error;
  }
  let result: T;
  try {
    // A contextManager.with that throws neither loses the add nor sends it twice (runWithin).
    result = await runWithin(contextManager, context, () => add(metadata), () => undefined);
  } catch (error) {
    ignoreThrow(() => recordFailure(span, error));
    ignoreThrow(() => span.end());
    throw error;
  }
  if (describeResult) ignoreThrow(() => span.setAttributes(describeResult(result)));
  ignoreThrow(() => span.end());
  return result;
}

/** Runs a Telemetry call whose throw must not reach the caller (see traceAdd). */
function ignoreThrow(call: () => void): void {
  try {
    call();
  } catch {
    // Dropped on purpose: no 'error' channel here, and the add's answer must stay the add's.
  }
}
