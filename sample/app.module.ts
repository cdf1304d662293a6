import { Module, type DynamicModule } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { EchoMQModule } from '../lib/index.js';
import { EchoMQHealthModule } from '../lib/integrations/terminus/index.js';
import { JobsController } from './jobs.controller.js';
import { LocksController } from './locks.controller.js';
import { REPORTS_QUEUE, ReportsProcessor } from './reports.processor.js';
import { SchedulersController } from './schedulers.controller.js';
import { FlowsController, REPORT_FLOWS } from './flows.controller.js';
import { PAGES_QUEUE, PagesProcessor } from './pages.processor.js';
import { LOCK_DEMO_QUEUE, LockDemo } from './lock-demo.js';
import { DemoController } from './demo.controller.js';
import { PageController } from './page.controller.js';
import { HealthController } from './health.controller.js';
import { LockMetricsRegistry, MetricsController } from './metrics.controller.js';

/** The sample service's settings. */
export interface SampleSettings {
  redisUrl: string;
  /** Key prefix, so a run can keep its keys apart. Default `emq`. */
  prefix?: string;
}

/**
 * The sample service: the reports queue, its processor (and its job scheduler), the pages queue
 * of its report flows, the jobs, reports and schedulers API, the lock events stream, the lock
 * timeline page at / with its demo jobs (the lock-demo queue), Terminus at /health and Prometheus
 * text at /metrics. Its workers record per-minute metrics (a day of them) for the board's charts
 * and the completed and failed totals of /metrics.
 */
@Module({})
export class AppModule {
  /** The module wired to one Redis. */
  static register(settings: SampleSettings): DynamicModule {
    return {
      module: AppModule,
      imports: [
        EchoMQModule.forRootAsync({
          useFactory: () => ({
            connection: settings.redisUrl,
            prefix: settings.prefix,
            defaultJobOptions: { removeOnComplete: { count: 1000 }, removeOnFail: { count: 1000 } },
            worker: { metrics: { maxDataPoints: 24 * 60 } },
          }),
        }),
        EchoMQModule.registerQueue(REPORTS_QUEUE, PAGES_QUEUE, LOCK_DEMO_QUEUE),
        EchoMQModule.registerFlowProducer({ name: REPORT_FLOWS }),
        TerminusModule,
        EchoMQHealthModule,
      ],
      controllers: [PageController, JobsController, SchedulersController, LocksController, DemoController, FlowsController, HealthController, MetricsController],
      providers: [ReportsProcessor, PagesProcessor, LockDemo, LockMetricsRegistry],
    };
  }
}
