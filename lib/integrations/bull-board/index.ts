/**
 * @echomq/nestjs/bull-board: EchoMQ queues on bull-board (docs/observability.md, "bull-board").
 * Its own entry so that `@bull-board/api`, an optional peer dependency, is loaded only by apps
 * that import it: the core entry (lib/index.ts) never does.
 */
export { BOARD_METRICS_MINUTES, EchoMQAdapter, type EchoMQAdapterOptions } from './echomq-adapter.js';
export { BoardJob } from './board-job.js';
export { BOARD_REDIS_INFO_TIMEOUT_MS } from './redis-info.js';
export { echoMQBoardAdapters, type NestProviders } from './nest.js';
export { BOARD_STATUSES, type BoardStatus } from './statuses.js';
