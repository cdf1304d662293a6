import { BadRequestException, Body, Controller, HttpCode, Post } from '@nestjs/common';
import { FlowProducer, InjectFlowProducer } from '../lib/index.js';
import { PAGES_QUEUE } from './pages.processor.js';
import { REPORTS_QUEUE } from './reports.processor.js';

/** The sample's flow producer (EchoMQModule.registerFlowProducer). */
export const REPORT_FLOWS = 'reports';

/**
 * POST /reports `{ "pages": n }`: a flow of n `page` jobs (pages queue) under one `assemble` job
 * (reports queue), which runs once every page is rendered and sums their words. GET /jobs/<id> of
 * the parent shows it waiting (`waiting-children`), then its result.
 */
@Controller('reports')
export class FlowsController {
  constructor(@InjectFlowProducer(REPORT_FLOWS) private readonly flow: FlowProducer) {}

  @Post()
  @HttpCode(202)
  async build(@Body() body?: { pages?: number }): Promise<{ id: string; children: string[] }> {
    const pages = Math.min(Math.max(1, Math.floor(Number(body?.pages ?? 3)) || 1), 50);
    try {
      const node = await this.flow.add({
        name: 'assemble', queueName: REPORTS_QUEUE, data: { pages },
        children: Array.from({ length: pages }, (_, i) => ({ name: 'page', queueName: PAGES_QUEUE, data: { page: i + 1 } })),
      });
      return { id: node.job.id, children: (node.children ?? []).map((child) => child.job.id) };
    } catch (error) {
      throw new BadRequestException((error as Error).message);
    }
  }
}
