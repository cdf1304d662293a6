import { Module, type DynamicModule } from '@nestjs/common';
import { EchoMQModule } from '../lib/index.js';
import { JobsController } from './jobs.controller.js';
import { LocksController } from './locks.controller.js';
import { REPORTS_QUEUE, ReportsProcessor } from './reports.processor.js';

/** The sample service's settings. */
export interface SampleSettings {
  redisUrl: string;
  /** Key prefix, so a run can keep its keys apart. Default `emq`. */
  prefix?: string;
}

/** The sample service: one queue, its processor, the jobs API and the lock events stream. */
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
        EchoMQModule.registerQueue(REPORTS_QUEUE),
      ],
      controllers: [JobsController, LocksController],
      providers: [ReportsProcessor],
    };
  }
}
