import { EchoMQOptionError } from '../../protocol/errors.js';
import { describe } from '../../protocol/names.js';

/** The states exportPrometheusMetrics reports, under BullMQ's names (`waiting` for our `wait`). */
export const PROMETHEUS_STATES = ['active', 'completed', 'delayed', 'failed', 'paused', 'prioritized', 'waiting', 'waiting-children'] as const;

/** The gauge's name: one series per queue and state. */
export const JOB_COUNT_METRIC = 'echomq_job_count';

/** The counters of finished jobs (BullMQ's bullmq_job_completed_total and _failed_total): queue.getMetrics' `meta.count`. */
export const FINISHED_METRICS = {
  completed: { name: 'echomq_job_completed_total', help: 'Jobs completed, as counted by workers with the metrics option' },
  failed: { name: 'echomq_job_failed_total', help: 'Jobs failed with no retry left, as counted by workers with the metrics option' },
} as const;

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
 * One queue in the Prometheus text exposition format: the gauge of job counts (one sample per
 * state, labelled with the queue, the state and the extra labels), then the counters of jobs
 * completed and failed for good (labelled with the queue and the extra labels), each with its
 * HELP and TYPE lines. Each line ends with a line feed. Several queues' texts on one route need
 * each metric's HELP and TYPE once, and its samples together: see docs/observability.md.
 */
export function queueMetricsText(
  queue: string, counts: Readonly<Record<string, number>>, finished: Readonly<Record<'completed' | 'failed', number>>,
  labels: Readonly<Record<string, string>> = {},
): string {
  const extra = Object.entries(labels).map(([name, value]) => `,${name}="${escapeLabelValue(value)}"`).join('');
  const queueLabel = `queue="${escapeLabelValue(queue)}"`;
  const lines = [
    `# HELP ${JOB_COUNT_METRIC} Number of jobs in the queue by state`,
    `# TYPE ${JOB_COUNT_METRIC} gauge`,
    ...PROMETHEUS_STATES.map((state) => `${JOB_COUNT_METRIC}{${queueLabel},state="${state}"${extra}} ${counts[state] ?? 0}`),
  ];
  for (const type of ['completed', 'failed'] as const) {
    const { name, help } = FINISHED_METRICS[type];
    lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} counter`, `${name}{${queueLabel}${extra}} ${finished[type]}`);
  }
  return lines.join('\n') + '\n';
}
