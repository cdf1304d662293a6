/**
 * @echomq/nestjs/prometheus: prom-client metrics for a LockManager (prom-client is an optional peer
 * dependency: only this entry loads it), and joinPrometheusTexts to serve them with the queues'
 * texts on one route. The queues' job counts need no dependency: queue.exportPrometheusMetrics().
 * docs/observability.md, "Prometheus".
 */
export { collectLockMetrics, type LockMetrics, type LockMetricsOptions } from './lock-metrics.js';
export { joinPrometheusTexts } from './join-texts.js';
