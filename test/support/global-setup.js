// One private Redis for the whole test run, unless REDIS_URL points elsewhere: a redis-server, or
// with ECHOMQ_TEST_CLUSTER=1 (npm run test:cluster) a three-master Redis Cluster.
import { startCluster } from './redis-cluster.js';
import { startRedis } from './redis-process.js';

export default async function globalSetup() {
  if (process.env.ECHOMQ_TEST_CLUSTER === '1') {
    const cluster = await startCluster();
    globalThis.__echomqRedis = cluster;
    process.env.ECHOMQ_TEST_CLUSTER_NODES = cluster.nodes.map((n) => `${n.host}:${n.port}`).join(',');
    return;
  }
  if (process.env.REDIS_URL) return;
  const redis = await startRedis();
  globalThis.__echomqRedis = redis;
  process.env.REDIS_URL = redis.url;
  process.env.ECHOMQ_TEST_OWN_REDIS = '1';
}
