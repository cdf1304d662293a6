#!/usr/bin/env node
// Builds lua/ from lua-src/: every script made self-contained, so any runtime can send a file of
// lua/ as is with EVAL or SCRIPT LOAD.
//
//   npm run build:lua            writes lua/<name>-<KEYS>.lua for every lua-src/<name>-<KEYS>.lua
//   node scripts/build-lua.mjs --check
//                                writes nothing; lists the files of lua/ that differ from what it
//                                would write (or are missing, or have no source) and exits 1
//
// A source pulls a shared helper in with a line `-- @include <name>` (lua-src/includes/<name>.lua).
// An include declares the includes it calls with the same lines at its top. Each include is
// inlined once per script, where its first `@include` stands, after the includes it declares (a Lua
// local must be defined before the code that calls it); a later line naming it again is dropped.
// The output depends on the sources alone (sorted names, no dates), so a script's SHA1 only
// changes when its source or an include it uses changes.
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const SOURCE_DIR = 'lua-src';
const OUTPUT_DIR = 'lua';
const INCLUDE_LINE = /^-- @include (\S+)[ \t]*$/;
const SCRIPT_NAME = /^\w+-\d+\.lua$/;

/** The self-contained text of one script of lua-src/. */
export function buildScript(fileName, sourceDir = join(root, SOURCE_DIR)) {
  const inlined = new Set();
  const expand = (text, from) => {
    const out = [];
    for (const line of text.replace(/\n$/, '').split('\n')) {
      const include = INCLUDE_LINE.exec(line);
      if (!include) {
        out.push(line);
        continue;
      }
      const name = include[1];
      if (inlined.has(name)) continue;
      inlined.add(name);
      const path = join(sourceDir, 'includes', `${name}.lua`);
      if (!existsSync(path)) throw new Error(`${from}: no include ${SOURCE_DIR}/includes/${name}.lua`);
      const [declared, body] = splitDeclared(readFileSync(path, 'utf8'));
      const helpers = expand(declared, `${name}.lua`);
      if (helpers) out.push(helpers);
      out.push(`-- [${SOURCE_DIR}/includes/${name}.lua]`, expand(body, `${name}.lua`));
    }
    return out.join('\n');
  };
  const source = readFileSync(join(sourceDir, fileName), 'utf8');
  const header = `-- Generated from ${SOURCE_DIR}/${fileName} by \`npm run build:lua\`: edit the source, not this file.`;
  return `${header}\n${expand(source, fileName)}\n`;
}

/** An include's leading `@include` lines, and the rest of its text. */
function splitDeclared(text) {
  const lines = text.split('\n');
  let n = 0;
  while (n < lines.length && INCLUDE_LINE.test(lines[n])) n++;
  return [lines.slice(0, n).join('\n'), lines.slice(n).join('\n')];
}

/** Every script of lua-src/, as fileName -> the text of lua/<fileName>, in name order. */
export function buildAll(sourceDir = join(root, SOURCE_DIR)) {
  const files = readdirSync(sourceDir).filter((f) => SCRIPT_NAME.test(f)).sort();
  return new Map(files.map((f) => [f, buildScript(f, sourceDir)]));
}

/** The files of lua/ that differ from the build: stale, missing, or without a source. */
export function outOfDate(built, outputDir = join(root, OUTPUT_DIR)) {
  const present = existsSync(outputDir) ? readdirSync(outputDir).filter((f) => f.endsWith('.lua')) : [];
  const stale = [...built].filter(([f, text]) => !existsSync(join(outputDir, f)) || readFileSync(join(outputDir, f), 'utf8') !== text).map(([f]) => f);
  const orphans = present.filter((f) => !built.has(f));
  return [...stale, ...orphans].sort();
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const built = buildAll();
  const outputDir = join(root, OUTPUT_DIR);
  if (process.argv.includes('--check')) {
    const differ = outOfDate(built, outputDir);
    if (differ.length > 0) {
      console.error(`${OUTPUT_DIR}/ is out of date with ${SOURCE_DIR}/ (run npm run build:lua): ${differ.join(', ')}`);
      process.exit(1);
    }
    console.log(`${OUTPUT_DIR}/ is up to date (${built.size} scripts)`);
  } else {
    mkdirSync(outputDir, { recursive: true });
    for (const [f, text] of built) writeFileSync(join(outputDir, f), text);
    const orphans = outOfDate(built, outputDir);
    if (orphans.length > 0) {
      console.error(`${OUTPUT_DIR}/ holds files with no source in ${SOURCE_DIR}/ (delete them): ${orphans.join(', ')}`);
      process.exitCode = 1;
    }
    console.log(`wrote ${built.size} scripts to ${OUTPUT_DIR}/`);
  }
}
