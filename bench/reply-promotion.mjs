// node bench/reply-promotion.mjs [jobs]: ioredis alone, no EchoMQ: how much of a batch reply's job
// data V8 promotes to the old generation when the reply array is left whole after its parts were
// taken out, against emptied (what lib/protocol/scripts.ts's emptyReply does). Each call is an
// EVALSHA answering like finishJobs-13 (a flat code, jobId, fields triple per job, 25 jobs of
// 3.5 KB data a call, two calls in flight); each job's fields live a turn of the event loop, as a
// no-op job's do. Each mode runs in a child under `--trace-gc-nvp`, whose scavenges' `promoted=`
// are summed while the calls run.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { startRedis } from '../test/support/redis-process.js';
import { fewKilobytes } from './setting-scenarios.mjs';

const JOBS_A_CALL = 25;
const HASHES = 200;
const jobs = Number(process.argv[2] ?? 30000);
const mode = process.env.REPLY_MODE;

if (mode === undefined) {
  for (const each of ['whole', 'emptied']) {
    const child = spawnSync(process.execPath, ['--trace-gc-nvp', fileURLToPath(import.meta.url), String(jobs)], {
      env: { ...process.env, REPLY_MODE: each }, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024,
    });
    if (child.status !== 0) throw new Error(`the ${each} run failed: ${child.stderr}`);
    let promoted = 0;
    let counting = false;
    for (const line of child.stdout.split('\n')) {
      if (line === 'START') counting = true;
      else if (line === 'END') counting = false;
      else if (counting) promoted += Number(/\bpromoted=(\d+)/.exec(line)?.[1] ?? 0);
    }
    console.log(`reply left ${each.padEnd(7)}: ${(promoted / jobs / 1024).toFixed(2)} KB promoted a job`);
  }
  process.exit(0);
}

const server = await startRedis();
const client = new Redis(server.url);
for (let i = 0; i < HASHES; i++) await client.hset(`job:${i}`, 'name', 'bench', 'data', JSON.stringify(fewKilobytes(i)));
const sha = await client.script('load', `
  local out = {}
  for i = 1, tonumber(ARGV[1]) do
    local id = (tonumber(ARGV[2]) + i) % ${HASHES}
    out[#out + 1] = 1; out[#out + 1] = tostring(id); out[#out + 1] = redis.call('HGETALL', 'job:' .. id)
  end
  return { out, 0, 0 }`);
let sent = 0;

async function takeBatch() {
  const reply = await client.evalsha(sha, 0, JOBS_A_CALL, sent);
  const [results] = reply;
  const fields = [];
  for (let i = 0; i < JOBS_A_CALL; i++) fields.push(results[3 * i + 2]);
  if (mode === 'emptied') reply.length = 0;
  return fields;
}

async function runJob(hash) {
  await new Promise((resolve) => setImmediate(resolve));
  JSON.parse(hash[hash.indexOf('data') + 1]);
}

console.log('START');
await Promise.all([0, 1].map(async () => {
  while (sent < jobs) {
    sent += JOBS_A_CALL;
    await Promise.all((await takeBatch()).map(runJob));
  }
}));
console.log('END');
await client.quit();
await server.stop();
