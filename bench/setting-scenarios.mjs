// Processing at concurrency 50 in settings beyond the defaults (issue 17: "in every setting users
// run"): priorities, a few KB of data per job, a retry per job, every job failing. Opt-in
// (`--only settings`): the default run stays as long as it was.
import { CheckFailed, check, measure } from './measure.mjs';
import { preloadJobs } from './add-scenarios.mjs';
import { verifyCounts } from './verify.mjs';

const CONCURRENCY = 50;
/** Fields of the "few KB" data: 48 of 60 characters each, about 3.5 KB as JSON. */
const DATA_FIELDS = 48;

/**
 * A job's data of about 3.5 KB, like an order or a webhook body: many short text fields, each
 * different (a payload of one repeated character would flatter both systems' string handling).
 */
export function fewKilobytes(i) {
  const data = { i };
  for (let f = 0; f < DATA_FIELDS; f++) data[`field${f}`] = `${i}-${f}-`.padEnd(60, ((i * 31 + f * 7) % 1e9).toString(36));
  return data;
}

/**
 * One worker at concurrency 50 draining a preloaded queue. `setting`: { label, opts(i), data(i),
 * fails(job) (the handler throws when true), runsPerJob, outcome ('completed' or 'failed') }.
 * Timed: until every job reached its outcome; checked: every job ran runsPerJob times, wait and
 * active are empty and the outcome's set holds every job.
 */
function inSetting(setting) {
  return {
    name: `settings, concurrency ${CONCURRENCY}: ${setting.label}`,
    size: (sizes) => sizes.process50,
    async run(system, ctx) {
      const total = ctx.sizes.process50;
      const name = ctx.queueName();
      const queue = system.queue(name, ctx.url);
      const runs = new Uint8Array(total);
      let reached = 0;
      let resolveDone;
      const done = new Promise((resolve) => (resolveDone = resolve));
      const worker = system.worker(name, ctx.url, async (job) => {
        runs[job.data.i]++;
        if (setting.fails(job)) throw new Error('bench: this attempt fails');
      }, CONCURRENCY);
      worker.on(setting.outcome, () => { if (++reached === total) resolveDone(); });
      worker.on('error', (error) => console.error(`${system.name} worker error:`, error.message));
      let closed = false;
      try {
        await preloadJobs(queue, total, (i) => ({ name: 'bench', data: setting.data(i), opts: setting.opts(i) }));
        await system.ready(worker);
        const figures = await measure(ctx.meter, total, async () => {
          void worker.run();
          let timer;
          await Promise.race([done, new Promise((_, reject) => {
            timer = setTimeout(() => reject(new CheckFailed(`only ${reached} of ${total} jobs reached ${setting.outcome} in ${ctx.timeoutMs} ms`)), ctx.timeoutMs);
          })]).finally(() => clearTimeout(timer));
        });
        await worker.close();
        closed = true;
        const wrong = runs.filter((count) => count !== setting.runsPerJob).length;
        check(wrong === 0, `${wrong} jobs did not run exactly ${setting.runsPerJob} times`);
        await verifyCounts(ctx.meter, system, name, { wait: 0, active: 0, [setting.outcome]: total });
        return figures;
      } finally {
        if (!closed) await worker.close(true);
        await queue.close();
      }
    },
  };
}

const succeeds = () => false;
const plainData = (i) => ({ i });

export const settingScenarios = [
  inSetting({ label: 'priorities 1 to 10', opts: (i) => ({ priority: 1 + (i % 10) }), data: plainData, fails: succeeds, runsPerJob: 1, outcome: 'completed' }),
  inSetting({ label: 'data of 3.5 KB', opts: () => ({}), data: fewKilobytes, fails: succeeds, runsPerJob: 1, outcome: 'completed' }),
  inSetting({ label: 'attempts 2, the first fails', opts: () => ({ attempts: 2 }), data: plainData, fails: (job) => job.attemptsMade === 0, runsPerJob: 2, outcome: 'completed' }),
  inSetting({ label: 'every job fails', opts: () => ({}), data: plainData, fails: () => true, runsPerJob: 1, outcome: 'failed' }),
];
