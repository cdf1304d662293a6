import { Controller, Get, Header, Injectable, type OnModuleDestroy } from '@nestjs/common';
import { Registry } from 'prom-client';
import { InjectQueue, LockManager, Queue } from '../lib/index.js';
import { collectLockMetrics, joinPrometheusTexts, type LockMetrics } from '../lib/integrations/prometheus/index.js';
import { LOCK_DEMO_QUEUE } from './lock-demo.js';
import { PAGES_QUEUE } from './pages.processor.js';
import { REPORTS_QUEUE } from './reports.processor.js';

/**
 * The app's LockManager metrics in a prom-client registry of the sample's own (a second app in one
 * process, as in the tests, would clash on prom-client's global one); taken out at shutdown.
 */
@Injectable()
export class LockMetricsRegistry implements OnModuleDestroy {
  readonly registry = new Registry();
  private readonly collector: LockMetrics;

  constructor(locks: LockManager) {
    this.collector = collectLockMetrics(locks, { registry: this.registry });
  }

  onModuleDestroy(): void {
    this.collector.stop();
  }
}

/**
 * GET /metrics, for Prometheus to scrape (docs/observability.md, "Prometheus"): each queue's job
 * counts and its completed and failed totals (queue.exportPrometheusMetrics; the totals count
 * because the sample's workers have `metrics`), and the LockManager's metrics (collectLockMetrics),
 * joined so each metric's HELP and TYPE come once. Read only when scraped.
 */
@Controller('metrics')
export class MetricsController {
  private readonly queues: Queue[];

  constructor(
    @InjectQueue(REPORTS_QUEUE) reports: Queue,
    @InjectQueue(PAGES_QUEUE) pages: Queue,
    @InjectQueue(LOCK_DEMO_QUEUE) demo: Queue,
    private readonly locks: LockMetricsRegistry,
  ) {
    this.queues = [reports, pages, demo];
  }

  @Get()
  @Header('Content-Type', 'text/plain; version=0.0.4; charset=utf-8')
  async scrape(): Promise<string> {
    const texts = await Promise.all(this.queues.map((queue) => queue.exportPrometheusMetrics({ app: 'echomq-sample' })));
    return joinPrometheusTexts(...texts, await this.locks.registry.metrics());
  }
}
