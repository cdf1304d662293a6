// One private redis-server for the whole test run, unless REDIS_URL points elsewhere.
import { startRedis } from './redis-process.js';

export default async function globalSetup() {
  if (process.env.REDIS_URL) return;
  const redis = await startRedis();
  globalThis.__echomqRedis = redis;
  process.env.REDIS_URL = redis.url;
  process.env.ECHOMQ_TEST_OWN_REDIS = '1';
}
