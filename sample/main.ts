import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module.js';
import { ensureRedis } from './local-redis.js';
import { BOARD_PATH, mountBoard } from './board.js';

/** Starts the sample service: finds (or starts) a Redis, then serves HTTP on PORT (default 3000). */
async function bootstrap(): Promise<void> {
  const logger = new Logger('Sample');
  let redis: Awaited<ReturnType<typeof ensureRedis>>;
  try {
    redis = await ensureRedis();
  } catch (error) {
    logger.error((error as Error).message);
    process.exitCode = 1;
    return;
  }
  const app = await NestFactory.create(AppModule.register({ redisUrl: redis.url }));
  // SIGTERM / SIGINT: app.close() lets workers finish their running jobs (locks renewed) before
  // queues and connections close; only then the redis-server the sample may have started stops.
  const shutdown = async (signal: string) => {
    logger.log(`${signal}: draining the workers`);
    await app.close();
    await redis.stop();
    process.exit(0);
  };
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  process.once('SIGINT', () => void shutdown('SIGINT'));
  mountBoard(app); // before listen() initialises the app: Nest's own 404 route would come first
  const port = Number(process.env.PORT ?? 3000);
  await app.listen(port);
  const base = `http://localhost:${port}`;
  logger.log(`EchoMQ sample on ${base} (Redis ${redis.url})`);
  logger.log(`  the lock timeline: ${base}/`);
  logger.log(`  curl -X POST ${base}/jobs/sum -H 'content-type: application/json' -d '{"numbers":[1,2,3]}'`);
  logger.log(`  curl -X POST ${base}/jobs/render -H 'content-type: application/json' -d '{"pages":8}'`);
  logger.log(`  curl ${base}/jobs/<id>      curl -N ${base}/locks/events`);
  logger.log(`  curl ${base}/schedulers     curl '${base}/jobs?state=delayed,completed'`);
  logger.log(`  curl -X POST ${base}/reports -H 'content-type: application/json' -d '{"pages":5}'   (a flow)`);
  logger.log(`  bull-board: ${base}${BOARD_PATH}`);
  logger.log(`  curl ${base}/health         curl ${base}/metrics`);
}

void bootstrap();
