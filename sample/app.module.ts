import { Module, type DynamicModule } from '@nestjs/common';
import { EchoMQModule } from '../lib/index.js';
import { JobsController } from './jobs.controller.js';
import { LocksController } from './locks.controller.js';
import { REPORTS_QUEUE, ReportsProcessor } from './reports.processor.js';
import { SchedulersController } from './schedulers.controller.js';
import { FlowsController, REPORT_FLOWS } from './flows.controller.js';
import { PAGES_QUEUE, PagesProcessor } from './pages.processor.js';
import { LOCK_DEMO_QUEUE, LockDemo } from './lock-demo.js';
import { DemoController } from './demo.controller.js';
import { PageController } from './page.controller.js';

/** The sample service's settings. */
export interface SampleSettings {
  redisUrl: string;
  /** Key prefix, so a run can keep its keys apart. Default `emq`. */
  prefix?: string;
}

/**
 * The sample service: the reports queue, its processor (and its job scheduler), the pages queue
 * of its report flows, the jobs, reports and schedulers API, the lock events stream, and the lock
 * timeline page at / with its demo jobs (the lock-demo queue).
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
          }),
        }),
        EchoMQModule.registerQueue(REPORTS_QUEUE, PAGES_QUEUE, LOCK_DEMO_QUEUE),
        EchoMQModule.registerFlowProducer({ name: REPORT_FLOWS }),
      ],
      controllers: [PageController, JobsController, SchedulersController, LocksController, DemoController, FlowsController],
      providers: [ReportsProcessor, PagesProcessor, LockDemo],
    };
  }
}
