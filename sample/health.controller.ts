import { Controller, Get } from '@nestjs/common';
import { HealthCheck, HealthCheckService } from '@nestjs/terminus';
import { EchoMQHealthIndicator } from '../lib/integrations/terminus/index.js';

/**
 * GET /health: Terminus with the EchoMQ indicator over every queue of the sample (docs/observability.md,
 * "Health"): 200 `ok` (or `degraded`: a backlog over 1,000, more than 100 failures in a minute, an
 * evicting Redis), 503 when Redis does not answer within a second.
 */
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly echomq: EchoMQHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check() {
    return this.health.check([() => this.echomq.isHealthy('queues', { timeoutMs: 1_000, maxWaiting: 1_000, maxFailedPerMinute: 100 })]);
  }
}
