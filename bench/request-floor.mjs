// The floor under a one-at-a-time worker's Redis CPU. A worker at concurrency 1 sends one request
// a job (its finish, which also takes the next job); so does BullMQ's. Before any script work,
// that request costs Redis its read, its parsing, the script call and the reply, and the wake-up
// of a server that sat idle while the handler ran. This scenario reads that cost alone: a script
// that returns at once, called one request at a time with a lone finish's 14 KEYS and 15 ARGV.
// It is Redis's cost, not a system's: both systems' turns send the same request, so the two
// columns read the same within the noise. bench/run.mjs adds it to the c1 goal's rows
// (bench/README.md, "The floor under c1's Redis CPU").
import { Redis } from 'ioredis';
import { loneFinishRequest } from './lone-call.mjs';
import { measure } from './measure.mjs';
import { connectionOf } from './systems.mjs';

const WARM_CALLS = 200;

export const requestFloor = {
  name: "process, concurrency 1, the request alone: an empty script with a lone finish's arguments",
  size: (sizes) => sizes.process1,
  unit: 'requests',
  figures: [['jobsPerSec', 'requests/s'], ['redisCpuUsPerJob', 'Redis CPU µs/request'], ['commandsPerJob', 'Redis commands/request'], ['nodeCpuUsPerJob', 'Node CPU µs/request']],
  async run(system, ctx) {
    const requests = requestFloor.size(ctx.sizes);
    const client = new Redis(connectionOf(ctx.url));
    try {
      const sha = await client.script('LOAD', 'return 0');
      const request = loneFinishRequest(ctx.queueName());
      const call = () => client.evalsha(sha, request.keys.length, ...request.keys, ...request.args());
      for (let i = 0; i < WARM_CALLS; i++) await call();
      return await measure(ctx.meter, requests, async () => {
        for (let i = 0; i < requests; i++) await call();
      });
    } finally {
      client.disconnect();
    }
  },
};
