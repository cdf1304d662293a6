import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Reads a script from `lua/` as it is. Every file there is self-contained (generated from
 * `lua-src/` by `npm run build:lua`, which inlines the shared helpers), so what this runtime sends
 * with EVALSHA and EVAL is byte for byte what any other runtime loads from the same file.
 */
let luaDir: string | undefined;

/** The package's `lua/` folder, found by walking up from this file (the depth differs in dist/). */
export function findLuaDir(): string {
  if (luaDir) return luaDir;
  // @ts-ignore TS1343 in the CommonJS build, whose emit scripts/build-package.mjs rewrites (docs/loading.md)
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = join(dir, 'lua');
    if (existsSync(join(candidate, 'extendLock-2.lua'))) return (luaDir = candidate);
    const parent = dirname(dir);
    if (parent === dir) throw new Error('EchoMQ: cannot find the lua/ folder of the package');
    dir = parent;
  }
}

/** The text of `lua/<fileName>`, unchanged. */
export function loadLuaSource(fileName: string): string {
  return readFileSync(join(findLuaDir(), fileName), 'utf8');
}
