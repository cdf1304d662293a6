#!/usr/bin/env node
// Checks lib/'s shape against docs/architecture.md: the floors import one way (a file imports its
// own floor and the floors below it, never one above), no import circle, no file over 400 lines.
// Every import counts, `import type` too: a type that points up is a dependency that points up.
//
// Files over 250 lines are allowed, a handful of them (HANDFUL): past it, cut one before adding one.
//
//   npm run check:structure            prints what breaks a rule, exits 1 if anything does
//   npm run check:structure -- --list  also prints each floor's files and the files over 250 lines
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const lib = join(root, 'lib');

/**
 * The floors, bottom first: a path prefix under lib/ each (docs/architecture.md says what each
 * holds). A file belongs to the longest prefix that matches it. A file directly in runtime/, or a
 * folder of runtime/ not named here, is on no floor, and that fails the check: give it one.
 */
export const FLOORS = [
  'protocol/',
  'runtime/core/',
  'runtime/telemetry/',
  'runtime/locks/',
  'runtime/events/',
  'runtime/job/',
  'runtime/flows/',
  'runtime/schedulers/',
  'runtime/queue/',
  'runtime/sandbox/',
  'runtime/worker/',
  'nest/',
  'integrations/',
  'index.ts',
  'internal.ts',
];
// Side by side: the integrations (as one group) and the two entries never import one another, so
// the public face never loads an integration's optional peer, nor the machinery of internal.ts.
const SIDE_BY_SIDE = new Set(['integrations/', 'index.ts', 'internal.ts']);

const MAX_LINES = 400;
const WATCH_LINES = 250;
/**
 * How many files may be over WATCH_LINES. Only ever lower: the facades (Worker, Queue's admin part)
 * and the sandbox host are the ones past it when the re-cut landed; a file that grows past 250
 * lines while this many are already there is cut by concern first.
 */
export const HANDFUL = 8;

/** Every .ts and .mjs file under `dir` (not .d.ts), as paths relative to lib/. */
function sources(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return /\.(ts|mjs)$/.test(name) && !name.endsWith('.d.ts') ? [relative(lib, path)] : [];
  });
}

// import ... from './x.js', export ... from './x.js', import './x.js', import('./x.js') in types.
const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(?\s*)['"](\.{1,2}\/[^'"]+)['"]/g;

/** The relative imports of `file`, as paths relative to lib/ (./x.js names ./x.ts or ./x.mjs). */
function importsOf(file, files) {
  const text = readFileSync(join(lib, file), 'utf8');
  const found = new Set();
  for (const [, specifier] of text.matchAll(SPECIFIER)) {
    const target = normalize(join(dirname(file), specifier));
    const candidates = [target.replace(/\.js$/, '.ts'), target];
    const hit = candidates.find((candidate) => files.has(candidate));
    if (hit) found.add(hit);
  }
  return [...found];
}

/** The index in FLOORS of the longest prefix that `file` starts with (-1: none). */
export function floorOf(file) {
  let best = -1;
  FLOORS.forEach((prefix, index) => {
    const matches = prefix.endsWith('/') ? file.startsWith(prefix) : file === prefix;
    if (matches && (best === -1 || prefix.length > FLOORS[best].length)) best = index;
  });
  return best;
}

/** The folders of runtime/ that FLOORS does not name: their files would be on no floor. */
function unlistedRuntimeFolders() {
  return readdirSync(join(lib, 'runtime'))
    .filter((name) => statSync(join(lib, 'runtime', name)).isDirectory() && !FLOORS.includes(`runtime/${name}/`));
}

/** The import circles: each strongly connected group of more than one file (Tarjan). */
function circles(graph) {
  let index = 0;
  const stack = [];
  const state = new Map();
  const groups = [];
  const visit = (file) => {
    const entry = { index, low: index, onStack: true };
    state.set(file, entry);
    index += 1;
    stack.push(file);
    for (const next of graph.get(file)) {
      if (!state.has(next)) {
        visit(next);
        entry.low = Math.min(entry.low, state.get(next).low);
      } else if (state.get(next).onStack) {
        entry.low = Math.min(entry.low, state.get(next).index);
      }
    }
    if (entry.low === entry.index) {
      const group = [];
      let member;
      do {
        member = stack.pop();
        state.get(member).onStack = false;
        group.push(member);
      } while (member !== file);
      if (group.length > 1) groups.push(group.sort());
    }
  };
  for (const file of graph.keys()) if (!state.has(file)) visit(file);
  return groups;
}

export function checkStructure() {
  const files = new Set(sources(lib));
  const graph = new Map([...files].map((file) => [file, importsOf(file, files)]));
  const upward = [];
  for (const [file, imports] of graph) {
    for (const target of imports) {
      const from = floorOf(file);
      const to = floorOf(target);
      const sideBySide = to !== from && SIDE_BY_SIDE.has(FLOORS[from]) && SIDE_BY_SIDE.has(FLOORS[to]);
      if (to > from || sideBySide) upward.push(`${file} -> ${target}`);
    }
  }
  for (const file of files) if (floorOf(file) === -1) upward.push(`${file} is on no floor (FLOORS)`);
  for (const folder of unlistedRuntimeFolders()) upward.push(`runtime/${folder}/ is on no floor (FLOORS)`);
  const lineCount = (text) => text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
  const lines = [...files].map((file) => [file, lineCount(readFileSync(join(lib, file), 'utf8'))]);
  return {
    files,
    graph,
    upward: upward.sort(),
    circles: circles(graph).map((group) => group.join(' ')).sort(),
    long: lines.filter(([, count]) => count > MAX_LINES).map(([file, count]) => `${file} (${count} lines)`).sort(),
    watched: lines.filter(([, count]) => count > WATCH_LINES && count <= MAX_LINES).map(([file, count]) => `${file} (${count} lines)`).sort(),
  };
}

/** What breaks a rule, per rule; `watched` is only a break past HANDFUL. */
export function breaks(found) {
  return { upward: found.upward, circles: found.circles, long: found.long, handful: found.watched.length > HANDFUL ? found.watched : [] };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const found = checkStructure();
  const titles = {
    upward: 'imports that go up a floor', circles: 'import circles', long: `files over ${MAX_LINES} lines`,
    handful: `files over ${WATCH_LINES} lines, past the handful (${HANDFUL})`,
  };
  let failed = false;
  for (const [rule, entries] of Object.entries(breaks(found))) {
    console.log(`${titles[rule]}: ${entries.length}`);
    for (const entry of entries) console.log(`  ${entry}`);
    if (entries.length > 0) failed = true;
  }
  console.log(`files over ${WATCH_LINES} lines (at most ${HANDFUL}): ${found.watched.length}`);
  if (process.argv.includes('--list')) {
    for (const entry of found.watched) console.log(`  ${entry}`);
    FLOORS.forEach((prefix, index) => {
      const members = [...found.files].filter((file) => floorOf(file) === index).sort();
      console.log(`floor ${index} ${prefix}: ${members.length} files`);
    });
  }
  process.exitCode = failed ? 1 : 0;
}
