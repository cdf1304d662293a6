import { afterAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { SCRIPTS } from '../lib/internal.js';
import { findLuaDir } from '../lib/protocol/lua-source.js';
import { luaGlobals, undefinedInRedis } from './support/lua-globals.js';
import { newClient } from './support/redis.js';

// lua/ is what every runtime loads: generated from lua-src/, and each file runnable as is.
const client = newClient();
afterAll(() => client.quit());

const luaDir = findLuaDir();
const root = dirname(luaDir);
const luaFiles = readdirSync(luaDir).filter((f) => f.endsWith('.lua')).sort();

describe('lua/', () => {
  it('is what npm run build:lua writes from lua-src/ (run it after editing lua-src/)', () => {
    let output: string;
    try {
      output = execFileSync(process.execPath, [join(root, 'scripts', 'build-lua.mjs'), '--check'], { encoding: 'utf8', stdio: 'pipe' });
    } catch (error) {
      const { stderr } = error as { stderr: string };
      throw new Error(stderr.trim());
    }
    expect(output).toContain(`up to date (${luaFiles.length} scripts)`);
  });

  it('holds no include line: every file is one self-contained script', () => {
    for (const file of luaFiles) {
      expect({ file, includeLines: readFileSync(join(luaDir, file), 'utf8').match(/^-- @include .*$/gm) }).toEqual({ file, includeLines: null });
    }
  });

  it('reads no global that Redis does not define and writes none, on any path (compiled by Redis, not run)', async () => {
    const found: Record<string, { undefinedGlobals: string[]; writes: string[] }> = {};
    for (const file of luaFiles) {
      const { reads, writes } = await luaGlobals(client, readFileSync(join(luaDir, file), 'utf8'));
      expect(reads).toContain('redis'); // the reader sees the globals a script does use
      found[file] = { undefinedGlobals: await undefinedInRedis(client, reads), writes };
    }
    expect(found).toEqual(Object.fromEntries(luaFiles.map((f) => [f, { undefinedGlobals: [], writes: [] }])));
  });

  it('is byte for byte what the Node runtime sends: SCRIPT LOAD of each file gives the SHA1 it calls', async () => {
    expect(Object.values(SCRIPTS).map((s) => s.fileName).sort()).toEqual(luaFiles);
    for (const script of Object.values(SCRIPTS)) {
      const text = readFileSync(join(luaDir, script.fileName), 'utf8');
      expect(script.lua).toBe(text);
      expect(await client.script('LOAD', text)).toBe(createHash('sha1').update(text).digest('hex'));
      expect(script.sha).toBe(createHash('sha1').update(text).digest('hex'));
    }
  });
});
