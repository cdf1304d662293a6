import type { INestApplication } from '@nestjs/common';
import { createBullBoard } from '@bull-board/api';
import { ExpressAdapter } from '@bull-board/express';
import { echoMQBoardAdapters } from '../lib/integrations/bull-board/index.js';

/** Where the sample serves bull-board. */
export const BOARD_PATH = '/board';

/**
 * Mounts bull-board at /board with every EchoMQ queue of the app (docs/observability.md). Call it
 * after NestFactory.create (the queues exist then) and before init() or listen(): middleware added
 * after Nest registered its routes would come behind its 404.
 */
export function mountBoard(app: INestApplication): void {
  const serverAdapter = new ExpressAdapter();
  serverAdapter.setBasePath(BOARD_PATH);
  createBullBoard({ queues: echoMQBoardAdapters(app), serverAdapter });
  app.use(BOARD_PATH, serverAdapter.getRouter());
}
