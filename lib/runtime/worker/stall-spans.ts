import type { Keys } from '../../protocol/keys.js';
import type { RedisClient } from '../../protocol/script.js';
import type { SweepResult } from '../../protocol/script-shapes.js';
import { ATTRIBUTES, MESSAGING_SYSTEM, SPAN_EVENTS } from '../telemetry/attributes.js';
import { SpanKind, type Telemetry } from '../core/telemetry.js';

/** The most stalled jobs one sweep traces: the rest of a mass stall (a dead worker at high concurrency) go untraced. */
export const MAX_TRACED_STALLS = 100;

/**
 * The stalls a sweep found, in the traces of their jobs: a short INTERNAL span per job, the child of
 * the context the job carries, holding an `echomq.job.stalled` event (moved back to wait, or to
 * failed). The worker whose lock lapsed may be dead, so its attempt's span cannot say it; this
 * does, from whichever worker swept. Made only for a worker given `telemetry`: it reads the jobs'
 * opts (one pipelined round trip per sweep that moved jobs); without it a sweep sends what it sent.
 */
export class StallSpans {
  constructor(
    private readonly telemetry: Telemetry,
    private readonly client: RedisClient,
    private readonly queueName: string,
    private readonly onError: (error: Error) => void,
  ) {}

  /** Records the sweep's moves; never throws (a failure goes to onError). */
  async record(keys: Keys, result: SweepResult, partition?: number): Promise<void> {
    const moves = [
      ...result.movedToWait.map((move) => ({ ...move, movedTo: 'wait' })),
      ...result.movedToFailed.map((move) => ({ ...move, movedTo: 'failed' })),
    ].slice(0, MAX_TRACED_STALLS);
    if (moves.length === 0) return;
    try {
      const pipeline = this.client.pipeline();
      for (const { jobId } of moves) pipeline.hget(keys.job(jobId), 'opts');
      const replies = (await pipeline.exec()) ?? [];
      const { tracer, contextManager } = this.telemetry;
      moves.forEach(({ jobId, stalledCount, movedTo }, i) => {
        // Each job's span on its own: a Telemetry that throws loses that span (reported), not the
        // rest of the sweep's, and a span it started is ended whatever throws after.
        let span: ReturnType<Telemetry['tracer']['startSpan']> | undefined;
        try {
          const active = contextManager.active();
          const metadata = metadataOf(replies[i]?.[1]);
          const parent = metadata ? contextManager.fromMetadata(active, metadata) : active;
          span = tracer.startSpan(`stalled ${this.queueName}`, { kind: SpanKind.INTERNAL }, parent);
          span.setAttributes({
            [ATTRIBUTES.system]: MESSAGING_SYSTEM,
            [ATTRIBUTES.destination]: this.queueName,
            [ATTRIBUTES.partition]: partition === undefined ? undefined : String(partition),
            [ATTRIBUTES.operationName]: 'stalled',
            [ATTRIBUTES.messageId]: jobId,
            [ATTRIBUTES.stalledCount]: stalledCount,
            [ATTRIBUTES.movedTo]: movedTo,
          });
          span.addEvent(SPAN_EVENTS.stalled, { [ATTRIBUTES.stalledCount]: stalledCount, [ATTRIBUTES.movedTo]: movedTo });
        } catch (error) {
          this.onError(error as Error);
        } finally {
          try {
            span?.end();
          } catch (error) {
            this.onError(error as Error);
          }
        }
      });
    } catch (error) {
      this.onError(error as Error);
    }
  }
}

/** opts.telemetry.metadata of a job's stored opts, if it carries one. */
function metadataOf(opts: unknown): string | undefined {
  if (typeof opts !== 'string') return undefined;
  try {
    const metadata = (JSON.parse(opts) as { telemetry?: { metadata?: unknown } } | null)?.telemetry?.metadata;
    return typeof metadata === 'string' && metadata !== '' ? metadata : undefined;
  } catch {
    return undefined;
  }
}
