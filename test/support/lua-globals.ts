import type { Redis } from 'ioredis';

/**
 * The global names a Lua script reads and writes, as Redis's own Lua 5.1 compiles it: the script
 * text is compiled (not run) by `loadstring` inside a small EVAL and dumped with `string.dump`;
 * the GETGLOBAL and SETGLOBAL instructions of the bytecode, in every nested function, name them.
 * A script that calls a helper it does not define (an include that was never inlined) reads that
 * helper as a global, on whatever path calls it; this sees it without running the path.
 */
export async function luaGlobals(client: Redis, source: string): Promise<{ reads: string[]; writes: string[] }> {
  const dump = (await client.callBuffer(
    'EVAL', 'local f, err = loadstring(ARGV[1], "=script") if not f then return redis.error_reply(err) end return string.dump(f)',
    0, source,
  )) as Buffer;
  const reads = new Set<string>();
  const writes = new Set<string>();
  new BytecodeReader(dump).chunk(reads, writes);
  return { reads: [...reads].sort(), writes: [...writes].sort() };
}

/** The names among `names` that the Redis script environment does not define. */
export async function undefinedInRedis(client: Redis, names: string[]): Promise<string[]> {
  if (names.length === 0) return [];
  const defined = (await client.eval(
    'local t = {} for i, n in ipairs(ARGV) do t[i] = rawget(_G, n) ~= nil and 1 or 0 end return t', 0, ...names,
  )) as number[];
  return names.filter((_, i) => defined[i] !== 1);
}

const OP_GETGLOBAL = 5;
const OP_SETGLOBAL = 7;
const LUA_TNIL = 0;
const LUA_TBOOLEAN = 1;
const LUA_TNUMBER = 3;
const LUA_TSTRING = 4;

/** Reads a Lua 5.1 dump (ldump.c) as Redis writes it: little endian, 4-byte int, 8-byte size_t. */
class BytecodeReader {
  private at = 0;

  constructor(private readonly buf: Buffer) {}

  chunk(reads: Set<string>, writes: Set<string>): void {
    const header = this.buf.subarray(0, 12);
    // ESC "Lua", version 5.1, official format, little endian, int 4, size_t 8, instruction 4, number 8.
    if (header.toString('hex') !== '1b4c75615100010408040800') throw new Error(`unexpected Lua dump header ${header.toString('hex')}`);
    this.at = 12;
    this.func(reads, writes);
  }

  private func(reads: Set<string>, writes: Set<string>): void {
    this.string(); // source
    this.at += 4 + 4 + 4; // linedefined, lastlinedefined; nups, numparams, is_vararg, maxstacksize
    const code: number[] = [];
    for (let n = this.int(), i = 0; i < n; i++) code.push(this.int());
    const constants: Array<string | null> = [];
    for (let n = this.int(), i = 0; i < n; i++) {
      const type = this.buf[this.at++];
      if (type === LUA_TNIL) constants.push(null);
      else if (type === LUA_TBOOLEAN) (this.at += 1, constants.push(null));
      else if (type === LUA_TNUMBER) (this.at += 8, constants.push(null));
      else if (type === LUA_TSTRING) constants.push(this.string());
      else throw new Error(`unexpected constant type ${type}`);
    }
    for (const instruction of code) {
      const op = instruction & 0x3f;
      if (op !== OP_GETGLOBAL && op !== OP_SETGLOBAL) continue;
      const name = constants[instruction >>> 14];
      if (name === null || name === undefined) throw new Error('a global instruction without a string constant');
      (op === OP_GETGLOBAL ? reads : writes).add(name);
    }
    for (let n = this.int(), i = 0; i < n; i++) this.func(reads, writes);
    const lineInfo = this.int();
    this.at += 4 * lineInfo;
    for (let n = this.int(), i = 0; i < n; i++) (this.string(), (this.at += 8)); // locals: name, startpc, endpc
    for (let n = this.int(), i = 0; i < n; i++) this.string(); // upvalue names
  }

  private int(): number {
    const value = this.buf.readUInt32LE(this.at);
    this.at += 4;
    return value;
  }

  private string(): string | null {
    const size = Number(this.buf.readBigUInt64LE(this.at));
    this.at += 8;
    if (size === 0) return null;
    const text = this.buf.toString('latin1', this.at, this.at + size - 1); // size counts the trailing NUL
    this.at += size;
    return text;
  }
}
