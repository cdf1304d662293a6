import { ATTRIBUTES, MESSAGING_SYSTEM, recordFailure } from './attributes.js';
import { SpanKind, type Attributes, type Telemetry } from './telemetry.js';

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
 */
export async function traceAdd<T>(
  telemetry: Telemetry, description: AddDescription, add: (metadata: string) => Promise<T>, describeResult?: (result: T) => Attributes,
): Promise<T> {
  const { tracer, contextManager } = telemetry;
  const { operation, destination } = description;
  const active = contextManager.active();
  const span = tracer.startSpan(destination === undefined ? operation : `${operation} ${destination}`, { kind: SpanKind.PRODUCER }, active);
  try {
    span.setAttributes({
      [ATTRIBUTES.system]: MESSAGING_SYSTEM,
      [ATTRIBUTES.operationType]: 'send',
      [ATTRIBUTES.operationName]: operation,
      [ATTRIBUTES.destination]: destination,
      ...description.attributes,
    });
    const context = span.setSpanOnContext(active);
    const metadata = contextManager.getMetadata(context);
    const result = await contextManager.with(context, () => add(metadata));
    if (describeResult) span.setAttributes(describeResult(result));
    return result;
  } catch (error) {
    recordFailure(span, error);
    throw error;
  } finally {
    span.end();
  }
}
