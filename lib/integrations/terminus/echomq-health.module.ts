import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { EchoMQHealthIndicator } from './echomq-health.indicator.js';

/**
 * Provides EchoMQHealthIndicator: import it beside EchoMQModule.forRoot and TerminusModule, and
 * inject the indicator into the health controller. The queues it reads are the app's registered ones.
 */
@Module({
  imports: [TerminusModule],
  providers: [EchoMQHealthIndicator],
  exports: [EchoMQHealthIndicator],
})
export class EchoMQHealthModule {}
