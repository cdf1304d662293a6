import { describe, it } from '@jest/globals';
import fc from 'fast-check';
import { commandArbitraries, settle, type Model } from './model/commands.js';
import { World } from './model/world.js';
import { scanKeys } from './support/redis.js';

// The model-based checker (docs/reliability.md, "The model checker"): random sequences of
// operations (adds, flows of random shapes and policies, cancels, removals, retries, job control,
// pause, schedulers, workers started, closed and given up, time going on) against real workers on
// the test Redis (a Cluster in the cluster run). After every step the instant invariants are read
// atomically from Redis; at settle steps, and at the end, the eventual ones must hold within
// SETTLE_MS; after obliterate no key of either queue may be left.
//
// npm test runs a small budget. The long profile: npm run check:model -- --runs N (or --minutes M);
// a failure prints its seed and path (and the commands' replayPath), and
// `npm run check:model -- --seed S --path P [--replay R]` replays it.
const RUNS = Number(process.env.MODEL_RUNS ?? 6);
const MAX_COMMANDS = Number(process.env.MODEL_MAX_COMMANDS ?? 25);
const MINUTES = Number(process.env.MODEL_MINUTES ?? 0);
const SEED = process.env.MODEL_SEED === undefined ? undefined : Number(process.env.MODEL_SEED);
const PATH = process.env.MODEL_PATH;

/** Figures of a run, printed at its end by the long profile (sequences, steps, checks). */
const figures = { sequences: 0, steps: 0 };

async function runSequence(commands: Iterable<fc.AsyncCommand<Model, World>>): Promise<void> {
  const world = new World();
  const model: Model = { steps: 0 };
  try {
    await fc.asyncModelRun(() => ({ model, real: world }), commands);
    await settle(world, 'the end of the sequence');
    // Workers first: a live one writes its registry entry and the sweep's guard back after an obliterate (docs/protocol.md).
    await world.stopWorkers();
    for (const queue of world.queues) await queue.obliterate({ force: true });
    for (const queue of world.queues) {
      const left = await scanKeys(world.client, `${queue.keys.base}*`);
      if (left.length > 0) throw new Error(`obliterate: keys of ${queue.name} left: ${left.slice(0, 10).join(', ')}`);
    }
  } catch (error) {
    (error as Error).message += `\n  steps run: ${world.log.join(' | ')}`;
    throw error;
  } finally {
    figures.sequences++;
    figures.steps += model.steps;
    await world.close();
  }
}

describe('the model checker', () => {
  it(`holds every invariant over ${MINUTES > 0 ? `${MINUTES} minutes of` : RUNS} random sequences`, async () => {
    const replayPath = process.env.MODEL_REPLAY;
    const property = fc.asyncProperty(fc.commands(commandArbitraries(), { maxCommands: MAX_COMMANDS, size: 'max', ...(replayPath ? { replayPath } : {}) }), runSequence);
    // A replay names its run by index: as many runs as reach it.
    const runs = PATH !== undefined ? Math.max(RUNS, Number(PATH.split(':')[0]) + 1) : RUNS;
    const settings: fc.Parameters<[Iterable<fc.AsyncCommand<Model, World>>]> = {
      numRuns: MINUTES > 0 ? Number.MAX_SAFE_INTEGER : runs,
      ...(MINUTES > 0 ? { interruptAfterTimeLimit: MINUTES * 60_000, markInterruptAsFailure: false } : {}),
      ...(SEED !== undefined ? { seed: SEED } : {}),
      ...(PATH !== undefined ? { path: PATH } : {}),
      endOnFailure: process.env.MODEL_SHRINK !== '1',
    };
    try {
      await fc.assert(property, settings);
    } finally {
      if (process.env.MODEL_FIGURES === '1') console.log(`model checker: ${figures.sequences} sequences, ${figures.steps} steps`);
    }
  }, MINUTES > 0 ? MINUTES * 60_000 + 120_000 : RUNS * 60_000);
});
