import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Reads a script from `lua/` and inlines its `-- @include <name>` lines from `lua/includes/`.
 * An include declares the includes it uses with the same lines at its top, so a script lists only
 * what it calls itself. Each include is inlined once per script, where its first `@include`
 * stands, after what it declares (a Lua local must be defined before the code that uses it), so
 * shared helpers (the pickup, the lock check) are written once and every script stays one
 * self-contained body.
 */
const INCLUDE_LINE = /^-- @include (\S+)\s*$/gm;

let luaDir: string | undefined;

/** The package's `lua/` folder, found by walking up from this file (the depth differs in dist/). */
export function findLuaDir(): string {
  if (luaDir) return luaDir;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = join(dir, 'lua');
    if (existsSync(join(candidate, 'extendLock-2.lua'))) return (luaDir = candidate);
    const parent = dirname(dir);
    if (parent === dir) throw new Error('EchoMQ: cannot find the lua/ folder of the package');
    dir = parent;
  }
}

/** The full text of `lua/<fileName>` with its includes resolved. */
export function loadLuaSource(fileName: string): string {
  const dir = findLuaDir();
  const seen = new Set<string>();
  const expand = (text: string): string =>
    text.replace(INCLUDE_LINE, (_line, name: string) => {
      if (seen.has(name)) return '';
      seen.add(name);
      return expand(readFileSync(join(dir, 'includes', `${name}.lua`), 'utf8'));
    });
  return expand(readFileSync(join(dir, fileName), 'utf8'));
}
