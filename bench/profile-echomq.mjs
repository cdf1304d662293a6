// node --cpu-prof bench/profile-echomq.mjs [jobs] [concurrency]: EchoMQ alone processing no-op
// jobs on a private Redis, to find where its Node time goes (the .cpuprofile opens in DevTools).
import { startRedis } from '../test/support/redis-process.js';
import { preload } from './add-scenarios.mjs';
import { SYSTEMS } from './systems.mjs';

const [jobs = 30000, concurrency = 50] = process.argv.slice(2).map(Number);
const keepAlive = setInterval(() => {}, 1000);
const server = await startRedis();
const system = SYSTEMS[process.env.SYSTEM ?? 'echomq'];
const queue = system.queue('profile', server.url);
await preload(queue, jobs);
let finished = 0;
let resolveDone;
const done = new Promise((resolve) => (resolveDone = resolve));
const worker = system.worker('profile', server.url, async () => {}, concurrency);
worker.on('completed', () => { if (++finished === jobs) resolveDone(); });
await system.ready(worker);
const started = performance.now();
void worker.run();
await done;
console.log(`${system.name}: ${jobs} jobs at concurrency ${concurrency}: ${Math.round(jobs / ((performance.now() - started) / 1000))} jobs/s`);
await worker.close();
await queue.close();
await server.stop();
clearInterval(keepAlive);
