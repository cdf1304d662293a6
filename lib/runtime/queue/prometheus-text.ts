import { EchoMQOptionError } from '../../protocol/errors.js';
import { describe } from '../../protocol/names.js';

/** The states exportPrometheusMetrics reports, under BullMQ's names (`waiting` for our `wait`). */
export const PROMETHEUS_STATES = ['active', 'completed', 'delayed', 'failed', 'paused', 'prioritized', 'waiting', 'waiting-children'] as const;

/** The gauge's name: one series per queue and state. */
export const JOB_COUNT_METRIC = 'echomq_job_count';

/** The labels exportPrometheusMetrics sets itself, which extra labels may not take over. */
const OWN_LABELS = new Set(['queue', 'state']);

/** A Prometheus label name: letters, digits and underscores, not a leading digit; `__` is reserved. */
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/**
 * Checks the extra labels before anything is read from Redis: a bad name would make the whole
 * scrape unparseable, which Prometheus reports far from its cause.
 */
export function assertPrometheusLabels(labels: unknown): asserts labels is Record<string, string> | undefined {
  if (labels === undefined) return;
  if (typeof labels !== 'object' || labels === null || Array.isArray(labels)) {
    throw new EchoMQOptionError('labels', `must be an object of label names to string values, got ${describe(labels)}`);
  }
  for (const [name, value] of Object.entries(labels)) {
    if (!LABEL_NAME.test(name) || name.startsWith('__')) {
      throw new EchoMQOptionError(`labels.${name}`, 'is not a Prometheus label name (letters, digits and _, not starting with a digit or __)');
    }
    if (OWN_LABELS.has(name)) throw new EchoMQOptionError(`labels.${name}`, 'is set by exportPrometheusMetrics itself');
    if (typeof value !== 'string') throw new EchoMQOptionError(`labels.${name}`, `must be a string, got ${describe(value)}`);
  }
}

/** A label value as the text format wants it: backslash, double quote and line feed escaped. */
export function escapeLabelValue(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

/**
 * The job counts of one queue in the Prometheus text exposition format: HELP and TYPE lines, then
 * one gauge sample per state, labelled with the queue, the state and the extra labels. Each line
 * ends with a line feed, so the texts of several queues can be joined as they are (the HELP and
 * TYPE lines then repeat, which a scrape accepts only once per metric: see docs/observability.md).
 */
export function jobCountsText(queue: string, counts: Readonly<Record<string, number>>, labels: Readonly<Record<string, string>> = {}): string {
  const extra = Object.entries(labels).map(([name, value]) => `,${name}="${escapeLabelValue(value)}"`).join('');
  const queueLabel = `queue="${escapeLabelValue(queue)}"`;
  const lines = [
    `# HELP ${JOB_COUNT_METRIC} Number of jobs in the queue by state`,
    `# TYPE ${JOB_COUNT_METRIC} gauge`,
    ...PROMETHEUS_STATES.map((state) => `${JOB_COUNT_METRIC}{${queueLabel},state="${state}"${extra}} ${counts[state] ?? 0}`),
  ];
  return lines.join('\n') + '\n';
}
