// node bench/profile-echomq.mjs [jobs] [concurrency] [--alloc | --promoted] [--few-kb]: EchoMQ alone (SYSTEM=bullmq for
// BullMQ) processing no-op jobs on a private Redis, to find where its Node time goes. Only the
// processing is profiled, not the preload nor module loading: the .cpuprofile (or, with --alloc,
// the .heapprofile of every allocation, collected or not) opens in DevTools, and the top functions
// by self time (or bytes allocated) a job are printed, with Node's and Redis's CPU per job.
// --promoted samples only what outlived a scavenge (collected by a major GC or still alive at the
// end): the objects the young generation promotes, which the major GC then pays for.
// --few-kb gives every job the 3.5 KB data of `--only settings` (fewKilobytes) instead of { i }.
import { Session } from 'node:inspector/promises';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { startRedis } from '../test/support/redis-process.js';
import { preload, preloadJobs } from './add-scenarios.mjs';
import { fewKilobytes } from './setting-scenarios.mjs';
import { SYSTEMS } from './systems.mjs';

const promoted = process.argv.includes('--promoted');
const alloc = promoted || process.argv.includes('--alloc');
const [jobs = 30000, concurrency = 50] = process.argv.slice(2).filter((a) => !a.startsWith('--')).map(Number);
const keepAlive = setInterval(() => {}, 1000);
const server = await startRedis();
const admin = new Redis(server.url);
const system = SYSTEMS[process.env.SYSTEM ?? 'echomq'];
const queue = system.queue('profile', server.url);
if (process.argv.includes('--few-kb')) await preloadJobs(queue, jobs, (i) => ({ name: 'bench', data: fewKilobytes(i) }));
else await preload(queue, jobs);
let finished = 0;
let resolveDone;
const done = new Promise((resolve) => (resolveDone = resolve));
const worker = system.worker('profile', server.url, async () => {}, concurrency);
worker.on('completed', () => { if (++finished === jobs) resolveDone(); });
await system.ready(worker);

const session = new Session();
session.connect();
if (alloc) {
  // Objects collected by either GC count too: what costs GC time is what was allocated, not what stayed.
  await session.post('HeapProfiler.startSampling', { samplingInterval: 1024, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: !promoted });
} else {
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
}
const redisCpu = await redisCpuSeconds();
const nodeCpu = process.cpuUsage();
const started = performance.now();
void worker.run();
await done;
const seconds = (performance.now() - started) / 1000;
const node = process.cpuUsage(nodeCpu);
const redisMicros = ((await redisCpuSeconds()) - redisCpu) * 1e6;
const { profile } = await session.post(alloc ? 'HeapProfiler.stopSampling' : 'Profiler.stop');
const file = join(tmpdir(), `${system.id}-c${concurrency}-${Date.now()}.${alloc ? 'heapprofile' : 'cpuprofile'}`);
writeFileSync(file, JSON.stringify(profile));

console.log(`${system.name}: ${jobs} jobs at concurrency ${concurrency}: ${Math.round(jobs / seconds)} jobs/s; ` +
  `Node CPU ${((node.user + node.system) / jobs).toFixed(1)} µs/job (user ${(node.user / jobs).toFixed(1)}), Redis CPU ${(redisMicros / jobs).toFixed(1)} µs/job`);
console.log(`${alloc ? 'allocation' : 'CPU'} profile of the processing: ${file}`);
for (const [where, share, perJob] of alloc ? topAllocations(profile) : topSelfTime(profile)) {
  console.log(`${share.toFixed(1).padStart(5)}%  ${perJob.padStart(10)}  ${where}`);
}
await worker.close();
await queue.close();
admin.disconnect();
await server.stop();
clearInterval(keepAlive);

async function redisCpuSeconds() {
  const info = await admin.info('cpu');
  const field = (name) => Number(new RegExp(`${name}:([0-9.]+)`).exec(info)[1]);
  return field('used_cpu_sys') + field('used_cpu_user');
}

function frameName({ functionName, url, lineNumber }) {
  return `${functionName || '(anonymous)'} ${url.split('/').slice(-2).join('/')}:${lineNumber + 1}`;
}

/** The 30 frames with the most self time: share of all samples (idle included) and µs a job. */
function topSelfTime({ nodes, samples, timeDeltas }) {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const self = new Map();
  let total = 0;
  samples.forEach((id, i) => {
    const where = frameName(byId.get(id).callFrame);
    self.set(where, (self.get(where) ?? 0) + timeDeltas[i]);
    total += timeDeltas[i];
  });
  return [...self].sort((a, b) => b[1] - a[1]).slice(0, 30).map(([where, us]) => [where, (100 * us) / total, `${(us / jobs).toFixed(2)} µs/job`]);
}

/** The 30 frames that allocated the most: share of all bytes sampled and bytes a job. */
function topAllocations({ head }) {
  const self = new Map();
  let total = 0;
  const walk = (node) => {
    if (node.selfSize) {
      const where = frameName(node.callFrame);
      self.set(where, (self.get(where) ?? 0) + node.selfSize);
      total += node.selfSize;
    }
    node.children.forEach(walk);
  };
  walk(head);
  return [...self].sort((a, b) => b[1] - a[1]).slice(0, 30).map(([where, bytes]) => [where, (100 * bytes) / total, `${Math.round(bytes / jobs)} B/job`]);
}
