// npm run bench:scripts: what EchoMQ's scripts cost Redis, in instructions per job, counted by
// valgrind's callgrind on a private redis-server. Unlike wall time or INFO cpu, the count is the
// same from run to run whatever else the machine does: use it to compare two versions of a script.
// Needs valgrind (apt-get install valgrind). Each phase is measured alone: callgrind's counters are
// zeroed before it and dumped after it. Every script is loaded before the first phase, so no phase
// counts a script's compilation.
//
// Where a phase's instructions go, by function: `--keep` keeps each phase's callgrind dump and
// prints its path, for `callgrind_annotate --inclusive=yes <file>`. Debian's redis-server has no
// symbols (Redis's and Lua's own functions read as addresses); `REDIS_SERVER=<path>` runs another
// build instead, one made from the same version's source (bench/README.md, "Where a finish's
// instructions go", says how).
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { randomUUID as uuid } from 'node:crypto';
import { Keys } from '../dist/lib/index.js';
import { SCRIPTS, Scripts } from '../dist/lib/internal.js';
import { loneFinishRequest } from './lone-call.mjs';
import { freePort } from '../test/support/redis-process.js';

const ROUNDS = 100;
const KEEP = process.argv.includes('--keep');
/**
 * Finishes per call, and the script: a lone finish as the fixed moveToFinished-14 and as a batch of
 * one; 25 is a worker at concurrency 50 on a plain queue; 6 and 2 are what the same worker's
 * finishes come to per partition of a queue of 8 partitions (bench/README.md, partitions).
 */
const FINISH_ROWS = [[1, 'moveToFinished-14'], [1, 'finishJobs-13'], [2, 'finishJobs-13'], [6, 'finishJobs-13'], [25, 'finishJobs-13']];

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'echomq-script-cost-'));
  const port = await freePort();
  const server = spawn('valgrind', ['--tool=callgrind', `--callgrind-out-file=${join(dir, 'cg.%p')}`,
    process.env.REDIS_SERVER ?? 'redis-server', '--port', String(port), '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: 'ignore' });
  const client = new Redis({ port, maxRetriesPerRequest: null, retryStrategy: () => 200 });
  client.on('error', () => undefined);
  try {
    await client.ping(); // waits for the server under valgrind (slow to start)
    // Every script loaded first: a phase's first call of a script would otherwise count its
    // compilation (about 5M instructions for finishJobs-13, 25k a job of the 2-a-call row).
    for (const script of Object.values(SCRIPTS)) await client.script('LOAD', script.lua);
    const measure = async (label, jobs, phase) => {
      execFileSync('callgrind_control', ['--zero', String(server.pid)], { stdio: 'ignore' });
      await phase();
      const { instructions, file } = dump(dir, server.pid);
      console.log(`${label.padEnd(58)} ${Math.round(instructions / jobs).toLocaleString('en-US').padStart(9)} instructions/job${KEEP ? `  ${file}` : ''}`);
    };
    const newJob = (i) => ({ name: 'bench', data: JSON.stringify({ i }), opts: '{}', timestamp: Date.now(), delay: 0, priority: 0, lifo: false });

    const adds = new Scripts(client, new Keys('adds'), 10_000);
    await measure('add alone (addJob-9)', ROUNDS, async () => {
      for (let i = 0; i < ROUNDS; i++) await adds.addJob(newJob(i));
    });
    await measure('add in batches of 500 (addJobs-9)', 10 * 500, async () => {
      for (let i = 0; i < 10; i++) await adds.addJobs(Array.from({ length: 500 }, (_, j) => newJob(j)));
    });

    const pickups = new Scripts(client, new Keys('pickups'), 10_000);
    await pickups.addJobs(Array.from({ length: ROUNDS }, (_, i) => newJob(i)));
    await measure('pickup alone, a job each (moveToActive-11)', ROUNDS, async () => {
      for (let i = 0; i < ROUNDS; i++) await pickups.moveToActive(uuid(), 30_000, Date.now());
    });
    await measure('pickup from an empty queue (moveToActive-11)', ROUNDS, async () => {
      for (let i = 0; i < ROUNDS; i++) await pickups.moveToActive(uuid(), 30_000, Date.now());
    });
    await measure("a partition's wake-up (SPUBLISH)", ROUNDS, async () => {
      for (let i = 0; i < ROUNDS; i++) await client.spublish(new Keys('pickups#0').wake, '');
    });

    for (const [batch, script] of FINISH_ROWS) {
      const scripts = new Scripts(client, new Keys(`finish-${batch}-${script}`), 10_000);
      await scripts.addJobs(Array.from({ length: (ROUNDS + 1) * batch }, (_, i) => newJob(i)));
      let held = [];
      for (let i = 0; i < batch; i++) {
        const token = uuid();
        held.push({ jobId: (await scripts.moveToActive(token, 30_000, Date.now())).job.id, token });
      }
      await measure(`finish + fetch-next, ${batch} a call (${script})`, ROUNDS * batch, async () => {
        for (let round = 0; round < ROUNDS; round++) {
          const finishes = held.map(({ jobId, token }) => ({
            jobId, token, timestamp: Date.now(), outcome: 'completed', value: 'null', stacktrace: '', keepCount: -1, keepAgeMs: 0,
            next: { token: uuid(), lockDuration: 30_000 },
          }));
          const picked = script === 'moveToFinished-14' ? [await scripts.moveToFinished(finishes[0])] : await scripts.finishJobs(finishes, Date.now(), 30_000);
          held = picked.map((pickup, i) => ({ jobId: pickup.job.id, token: finishes[i].next.token }));
        }
      });
    }

    // What a lone call costs before its script does its work: moveToFinished-14's 14 KEYS and 15
    // ARGV (as its row above sends them) to a script that returns at once, then to one that only
    // defines moveToFinished-14's helper functions (its text up to the end of its last `local
    // function`). The rest of the row above is its commands and the Lua around them.
    const lone = loneFinishRequest('lone');
    for (const [label, lua] of [['a lone call: an empty script', 'return 0'], ["a lone call: moveToFinished-14's functions defined", helpersOnly(SCRIPTS.moveToFinished.lua)]]) {
      const sha = await client.script('LOAD', lua);
      await measure(label, ROUNDS, async () => {
        for (let i = 0; i < ROUNDS; i++) await client.evalsha(sha, lone.keys.length, ...lone.keys, ...lone.args());
      });
    }

    // A failed attempt with attempts left: alone, a retryJob-12 and a pickup for the slot it freed
    // (what a worker sent before retries joined its batches); batched, a finishJobs-13 entry with
    // target "retried" and its fetch-next. Back to wait (no backoff), behind ROUNDS jobs more.
    const retries = new Scripts(client, new Keys('retries'), 10_000);
    await retries.addJobs(Array.from({ length: ROUNDS + 1 }, (_, i) => newJob(i)));
    let token = uuid();
    let jobId = (await retries.moveToActive(token, 30_000, Date.now())).job.id;
    await measure('retry alone (retryJob-12) + a pickup (moveToActive-11)', ROUNDS, async () => {
      for (let round = 0; round < ROUNDS; round++) {
        await retries.retryJob({ jobId, token, timestamp: Date.now(), delay: 0, failedReason: 'boom', stacktrace: '["at x"]' });
        token = uuid();
        jobId = (await retries.moveToActive(token, 30_000, Date.now())).job.id;
      }
    });
    const batchedRetries = new Scripts(client, new Keys('retries-25'), 10_000);
    await batchedRetries.addJobs(Array.from({ length: (ROUNDS + 1) * 25 }, (_, i) => newJob(i)));
    let held = [];
    for (let i = 0; i < 25; i++) {
      const heldToken = uuid();
      held.push({ jobId: (await batchedRetries.moveToActive(heldToken, 30_000, Date.now())).job.id, token: heldToken });
    }
    await measure('retry + fetch-next, 25 a call (finishJobs-13, "retried")', ROUNDS * 25, async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const finishes = held.map((h) => ({
          jobId: h.jobId, token: h.token, timestamp: Date.now(), outcome: 'retried', value: 'boom', stacktrace: '["at x"]', keepCount: -1, keepAgeMs: 0,
          next: { token: uuid(), lockDuration: 30_000 },
        }));
        const picked = await batchedRetries.finishJobs(finishes, Date.now(), 30_000);
        held = picked.map((pickup, i) => ({ jobId: pickup.job.id, token: finishes[i].next.token }));
      }
    });
  } finally {
    client.disconnect();
    server.kill('SIGTERM');
    await new Promise((resolve) => server.once('exit', resolve));
    if (!KEEP) rmSync(dir, { recursive: true, force: true });
  }
}

/** A bundled script's text up to the end of its last top-level `local function`, then `return 0`. */
function helpersOnly(lua) {
  const lines = lua.split('\n');
  const last = lines.findLastIndex((line) => line.startsWith('local function'));
  const end = lines.findIndex((line, i) => i > last && line === 'end');
  return `${lines.slice(0, end + 1).join('\n')}\nreturn 0\n`;
}

/** Dumps callgrind's counters; answers the instructions counted since the last zero and the dump's file. */
function dump(dir, pid) {
  execFileSync('callgrind_control', ['--dump', String(pid)], { stdio: 'ignore' });
  const files = execFileSync('sh', ['-c', `ls -t ${dir}/cg.${pid}.* 2>/dev/null || true`]).toString().trim().split('\n').filter(Boolean);
  const text = readFileSync(files[0], 'utf8');
  return { instructions: Number(/^(?:summary|totals): (\d+)/m.exec(text)[1]), file: files[0] };
}

await main();
