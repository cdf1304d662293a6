import { describe, expect, it } from '@jest/globals';
// @ts-expect-error: a plain .mjs script of the repository, with no declarations
import { breaks, checkStructure, HANDFUL } from '../scripts/check-structure.mjs';

// lib/'s floors import one way, with no circle, no file over 400 lines and only a handful over
// 250 (docs/architecture.md). `npm run check:structure` says what breaks which rule.
describe('the shape of lib/', () => {
  const found = checkStructure();
  const broken = breaks(found);

  it('no import goes up a floor', () => {
    expect(broken.upward).toEqual([]);
  });

  it('no import circle', () => {
    expect(broken.circles).toEqual([]);
  });

  it('no file over 400 lines', () => {
    expect(broken.long).toEqual([]);
  });

  it('at most a handful of files over 250 lines', () => {
    expect(broken.handful).toEqual([]);
    expect(HANDFUL).toBeLessThanOrEqual(8);
  });

  it('sees the imports it judges: the Nest module imports the runtime, and the runtime never the Nest face', () => {
    const imports = (file: string) => found.graph.get(file) as string[];
    expect(imports('nest/queue.registry.ts').some((target: string) => target.startsWith('runtime/'))).toBe(true);
    const runtimeToNest = [...found.graph].filter(([file, targets]: [string, string[]]) => file.startsWith('runtime/') && targets.some((t) => t.startsWith('nest/')));
    expect(runtimeToNest).toEqual([]);
  });
});
