import type { Redis } from 'ioredis';
import type { RedisClient } from '../../protocol/script.js';
import { servers } from '../../runtime/core/redis-health.js';
import { withinMs } from '../../runtime/core/within-ms.js';

/** Fields that are a sum over the masters: what the whole cluster holds or serves. */
const SUMMED = ['used_memory', 'used_memory_rss', 'used_memory_peak', 'maxmemory', 'connected_clients', 'blocked_clients', 'total_connections_received', 'total_commands_processed', 'keyspace_hits', 'keyspace_misses'];
/** Fields where the youngest master speaks for the cluster: it restarted last. */
const SMALLEST = ['uptime_in_seconds', 'uptime_in_days'];

/**
 * How long the board's Redis stats wait for INFO, in ms: a master that has not answered by then
 * (frozen, cut off) is left out, so `GET /api/redis/stats` answers rather than hang with it.
 */
export const BOARD_REDIS_INFO_TIMEOUT_MS = 2_000;

/**
 * The INFO text bull-board parses for its Redis stats. One server: its INFO as it is. A Cluster
 * (a partitioned queue's or a plain one's): INFO sent to one node answers for that node alone, a
 * different one each poll, so every master is asked and the answers are merged into one INFO text:
 * memory, clients and commands summed; uptime the youngest master's; `redis_version` the oldest
 * master's (the one the scripts must run on); `total_system_memory` summed once per host (masters
 * on one machine share it); `mem_fragmentation_ratio` over the summed memory; `redis_mode` cluster
 * and `cluster_masters` their count; other fields the first master's. A master that does not
 * answer within `timeoutMs` (all are asked at once) is left out; with none answering, the call
 * rejects.
 */
export async function boardRedisInfo(client: RedisClient, timeoutMs = BOARD_REDIS_INFO_TIMEOUT_MS): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  const silence = () => new Error(`Redis did not answer INFO within ${timeoutMs} ms`);
  const nodes = await withinMs(servers(client), timeoutMs);
  if (nodes === undefined) throw silence();
  const infos = nodes.map(async (node) => {
    const text = await withinMs(node.info(), Math.max(1, deadline - Date.now()));
    if (text === undefined) throw silence();
    return text;
  });
  if (nodes.length === 1) return infos[0];
  const settled = await Promise.allSettled(infos);
  const answered = settled.flatMap((result, i) => (result.status === 'fulfilled' ? [{ host: (nodes[i] as Redis).options.host, fields: parseInfo(result.value) }] : []));
  if (answered.length === 0) throw (settled[0] as PromiseRejectedResult).reason;
  return renderInfo(mergeMasters(answered, nodes.length));
}

/** boardRedisInfo's merge alone, over INFO texts (one per master): its test gives it versions one machine's servers never differ in. */
export function mergeInfoTexts(texts: string[]): string {
  return renderInfo(mergeMasters(texts.map((text) => ({ fields: parseInfo(text) })), texts.length));
}

/** One master's INFO fields, with the host it runs on (for the machine-wide fields). */
interface MasterInfo {
  host?: string;
  fields: Map<string, string>;
}

function mergeMasters(masters: MasterInfo[], known: number): Map<string, string> {
  const merged = new Map(masters[0].fields);
  const numbers = (field: string, of = masters) => of.map((m) => Number(m.fields.get(field))).filter(Number.isFinite);
  for (const field of SUMMED) {
    const values = numbers(field);
    if (values.length > 0) merged.set(field, String(values.reduce((sum, v) => sum + v, 0)));
  }
  for (const field of SMALLEST) {
    const values = numbers(field);
    if (values.length > 0) merged.set(field, String(Math.min(...values)));
  }
  const oneEachHost = [...new Map(masters.map((m) => [m.host ?? m.fields.get('run_id'), m])).values()];
  const system = numbers('total_system_memory', oneEachHost);
  if (system.length > 0) merged.set('total_system_memory', String(system.reduce((sum, v) => sum + v, 0)));
  const [rss, used] = [Number(merged.get('used_memory_rss')), Number(merged.get('used_memory'))];
  if (rss > 0 && used > 0) merged.set('mem_fragmentation_ratio', (rss / used).toFixed(2));
  const versions = masters.map((m) => m.fields.get('redis_version')).filter((v): v is string => v !== undefined);
  if (versions.length > 0) merged.set('redis_version', versions.sort(compareVersions)[0]);
  merged.set('redis_mode', 'cluster');
  merged.set('cluster_masters', String(known));
  merged.set('cluster_masters_answered', String(masters.length));
  return merged;
}

function parseInfo(text: string): Map<string, string> {
  const fields = new Map<string, string>();
  for (const line of text.split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon > 0 && !line.startsWith('#')) fields.set(line.slice(0, colon), line.slice(colon + 1));
  }
  return fields;
}

function renderInfo(fields: Map<string, string>): string {
  return [...fields].map(([field, value]) => `${field}:${value}`).join('\r\n') + '\r\n';
}

/** 6.2.14 before 7.0.15: by each number in turn. */
function compareVersions(a: string, b: string): number {
  const [x, y] = [a, b].map((v) => v.split('.').map(Number));
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const diff = (x[i] ?? 0) - (y[i] ?? 0);
    if (diff !== 0) return diff;
  }
  return 0;
}
