import fc from 'fast-check';
import type { FlowJob, JobOptions, Queue } from '../../lib/index.js';
import { sleep } from '../support/redis.js';
import { instantViolations, settledViolations } from './invariants.js';
import type { Behaviour, World } from './world.js';

/** The model: what a command may refer to. The checks themselves read Redis (invariants.ts). */
export interface Model {
  steps: number;
}

type Command = fc.AsyncCommand<Model, World>;

/** How long a settle waits for the eventual invariants: a lock lapse, two sweeps, a scheduler repair, notice rounds. */
export const SETTLE_MS = 8000;

/** Checks the instant invariants now; fails the run with what broke. */
async function checkNow(world: World, after: string): Promise<void> {
  const broken = (await world.snapshots()).flatMap(instantViolations);
  if (broken.length > 0) throw new Error(`after ${after}:\n  ${broken.join('\n  ')}`);
  if (world.errors.length > 0) throw new Error(`after ${after}: a worker reported ${world.errors.map((e) => e.message).join('; ')}`);
}

/** Waits (up to SETTLE_MS) until every invariant holds in one look, with a worker on each queue. */
export async function settle(world: World, why: string): Promise<void> {
  world.ensureWorkers();
  const until = Date.now() + SETTLE_MS;
  let broken: string[] = [];
  while (Date.now() < until) {
    const snapshots = await world.snapshots();
    const instant = snapshots.flatMap(instantViolations);
    if (instant.length > 0) throw new Error(`at ${why}:\n  ${instant.join('\n  ')}`);
    broken = await settledViolations(world.client, snapshots);
    if (broken.length === 0) return;
    await sleep(100);
  }
  throw new Error(`at ${why}, still after ${SETTLE_MS} ms:\n  ${broken.join('\n  ')}`);
}

/** A command: `label` says what it does (the shrunk sequence prints it), `act` does it. */
function command(label: string, act: (world: World) => Promise<unknown>): Command {
  return {
    check: () => true,
    async run(model, world) {
      model.steps++;
      world.log.push(label);
      await act(world);
      await checkNow(world, label);
    },
    toString: () => label,
  };
}

const behaviour: fc.Arbitrary<Behaviour> = fc.record({
  ms: fc.constantFrom(0, 0, 20, 150, 1500),
  fail: fc.constantFrom(0, 0, 1, 3),
});

const keep = fc.option(fc.constantFrom<JobOptions['removeOnComplete']>(true, 2, { count: 1 }, { age: 1 }), { nil: undefined });

const jobOptions: fc.Arbitrary<JobOptions> = fc.record({
  delay: fc.option(fc.constantFrom(100, 600), { nil: undefined }),
  priority: fc.option(fc.integer({ min: 1, max: 3 }), { nil: undefined }),
  attempts: fc.option(fc.constantFrom(2, 3), { nil: undefined }),
  removeOnComplete: keep,
  removeOnFail: keep,
  jobId: fc.option(fc.constantFrom('a', 'b', 'c'), { nil: undefined }),
  deduplication: fc.option(fc.record({ id: fc.constantFrom('d1', 'd2'), ttl: fc.option(fc.constantFrom(300, 2000), { nil: undefined }) }), { nil: undefined }),
}, { requiredKeys: [] }).map(dropUndefined);

const policy = fc.constantFrom<FlowJob['opts']>({}, { failParentOnFailure: true }, { ignoreDependencyOnFailure: true },
  { removeDependencyOnFailure: true }, { continueParentOnFailure: true });

const pick = fc.nat({ max: 1000 });

async function addJob(world: World, queue: Queue, data: Behaviour, opts: JobOptions): Promise<void> {
  const job = await queue.add('job', data, opts);
  world.added.push({ queue, id: job.id });
}

/** The commands, with their weights; each one's label carries its arguments. */
export function commandArbitraries(): Array<fc.Arbitrary<Command>> {
  return [
    fc.tuple(behaviour, jobOptions).map(([data, opts]) =>
      command(`add ${JSON.stringify(data)} ${JSON.stringify(opts)}`, (w) => addJob(w, w.parents, data, opts))),
    fc.array(fc.tuple(behaviour, jobOptions.map(({ deduplication: _d, ...rest }) => rest)), { minLength: 1, maxLength: 4 }).map((jobs) =>
      command(`addBulk ${JSON.stringify(jobs)}`, async (w) => {
        const added = await w.parents.addBulk(jobs.map(([data, opts]) => ({ name: 'bulk', data, opts })));
        for (const job of added) w.added.push({ queue: w.parents, id: job.id });
      })),
    fc.tuple(behaviour, fc.array(fc.tuple(behaviour, policy, fc.boolean(), fc.boolean()), { minLength: 1, maxLength: 3 })).map(([data, children]) =>
      command(`flow ${JSON.stringify({ data, children })}`, async (w) => {
        const node = await w.producer.add({
          name: 'parent', queueName: w.parents.name, data,
          children: children.map(([childData, opts, removeOnFail, delayed]) => ({
            name: 'child', queueName: w.children.name, data: childData,
            opts: { ...opts, ...(removeOnFail ? { removeOnFail: true } : {}), ...(delayed ? { delay: 300 } : {}) },
          })),
        });
        w.added.push({ queue: w.parents, id: node.job.id });
        for (const child of node.children ?? []) w.added.push({ queue: w.children, id: child.job.id });
      })),
    pick.map((p) => command(`cancel #${p}`, async (w) => {
      const target = w.pickJob(p);
      if (target) await w.tolerate(() => target.queue.cancelJob(target.id, 'model'));
    })),
    pick.map((p) => command(`remove #${p}`, async (w) => {
      const target = w.pickJob(p);
      if (target) await w.tolerate(() => target.queue.remove(target.id));
    })),
    pick.map((p) => command(`retry #${p}`, async (w) => {
      const target = w.pickJob(p);
      const job = target && await target.queue.getJob(target.id);
      if (job) await w.tolerate(() => job.retry());
    })),
    fc.tuple(pick, fc.constantFrom('promote', 'changePriority', 'changeDelay')).map(([p, what]) => command(`${what} #${p}`, async (w) => {
      const target = w.pickJob(p);
      const job = target && await target.queue.getJob(target.id);
      if (!job) return;
      if (what === 'promote') await w.tolerate(() => job.promote());
      else if (what === 'changePriority') await w.tolerate(() => job.changePriority({ priority: 2 }));
      else await w.tolerate(() => job.changeDelay(200));
    })),
    fc.boolean().map((pause) => command(pause ? 'pause' : 'resume', (w) => (pause ? w.parents.pause() : w.parents.resume()))),
    fc.tuple(fc.constantFrom('s1', 's2'), fc.constantFrom(300, 700), fc.boolean()).map(([id, every, remove]) =>
      command(remove ? `removeJobScheduler ${id}` : `upsertJobScheduler ${id} every ${every}`, async (w) => {
        if (remove) await w.parents.removeJobScheduler(id);
        else await w.parents.upsertJobScheduler(id, { every }, { name: 'tick', data: { ms: 0, fail: 0 } });
      })),
    fc.tuple(fc.boolean(), fc.integer({ min: 1, max: 3 })).map(([children, concurrency]) =>
      command(`start a worker on ${children ? 'children' : 'parents'} (concurrency ${concurrency})`, async (w) => w.startWorker(children ? w.children : w.parents, concurrency))),
    fc.tuple(pick, fc.boolean()).map(([p, force]) => command(`${force ? 'kill' : 'close'} worker #${p}`, (w) => w.stopWorker(p, force))),
    fc.constantFrom(50, 300, 1200).map((ms) => command(`time goes on ${ms} ms`, () => sleep(ms))),
    fc.constant(command('settle', (w) => settle(w, 'a settle step'))),
  ];
}

function dropUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
