#!/usr/bin/env node
// Records conformance vectors (docs/conformance.md) from hand-written cases: each case of
// scripts/conformance-cases/<script>.mjs gives `name`, `before`, `keys` and `argv`; this script
// runs it once against a private redis-server (a free port, never the shared 6379) and fills in
// `reply` and `after`, then writes conformance/<script>.json. What it writes is a draft to check
// by hand against the script's header before committing, as for a vector written by hand.
//
//   node scripts/record-conformance.mjs                  records every case file
//   node scripts/record-conformance.mjs promote-9 ...    only those scripts
//   node scripts/record-conformance.mjs --check [...]    writes nothing; lists the vectors that
//                                                        differ from a fresh recording, exits 1
//
// A case may add `reply: (actual) => shaped` to write the reply in a form that is not literal
// (`{ "atMost": N }` for a PTTL). A key of `after` that has a TTL is written with the smallest
// TTL of the case (those of `before`, and every integer of ARGV) that the format's rule matches
// (PTTL in (ttl/2, ttl]); the recorder stops when none does.
// Needs redis-server 6.2 or later on the PATH, like the scripts.
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { startRedis } from '../test/support/redis-process.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const CASES_DIR = join(root, 'scripts', 'conformance-cases');
const PLACEHOLDER = '{Q}';

const args = process.argv.slice(2);
const check = args.includes('--check');
const only = args.filter((a) => a !== '--check');

/** The case files, `<script>.mjs` (a file whose name starts with `_` is a helper). */
function caseFiles() {
  const files = readdirSync(CASES_DIR).filter((f) => f.endsWith('.mjs') && !f.startsWith('_')).sort();
  if (only.length === 0) return files;
  const wanted = only.map((name) => name.replace(/\.(lua|json|mjs)$/, ''));
  const missing = wanted.filter((name) => !files.includes(`${name}.mjs`));
  if (missing.length > 0) throw new Error(`no case file for ${missing.join(', ')} in ${CASES_DIR}`);
  return wanted.map((name) => `${name}.mjs`);
}

/** The text with every `{Q}` replaced by `{queue}`, or back (`unbind`). */
const bind = (value, queue) => JSON.parse(JSON.stringify(value).split(PLACEHOLDER).join(`{${queue}}`));
const unbind = (value, queue) => JSON.parse(JSON.stringify(value).split(`{${queue}}`).join(PLACEHOLDER));

function pairs(flat) {
  const out = [];
  for (let i = 0; i < flat.length; i += 2) out.push([flat[i], flat[i + 1]]);
  return out;
}

/** Writes a state as the format's table says (the replay's writer, test/support/conformance.ts). */
async function writeState(client, state) {
  for (const [key, stored] of Object.entries(state)) {
    switch (stored.type) {
      case 'string': await client.set(key, stored.value); break;
      case 'hash': await client.hset(key, ...stored.value); break;
      case 'list': await client.rpush(key, ...stored.value); break;
      case 'set': await client.sadd(key, ...stored.value); break;
      case 'zset': await client.zadd(key, ...pairs(stored.value).flatMap(([member, score]) => [score, member])); break;
      case 'stream': for (const entry of stored.value) await client.xadd(key, '*', ...entry); break;
      default: throw new Error(`${key}: unknown type ${stored.type}`);
    }
    if (stored.ttl !== undefined) await client.pexpire(key, stored.ttl);
  }
}

const withinTtl = (pttl, ttl) => pttl > ttl / 2 && pttl <= ttl;

/**
 * Every key of the queue in the format's notation, keys sorted: a hash as HGETALL lists it, a set
 * sorted, a TTL as the smallest of `ttls` it is within.
 */
async function readState(client, queue, ttls) {
  const keys = [];
  let cursor = '0';
  do {
    const [next, found] = await client.scan(cursor, 'MATCH', `*{${queue}}*`, 'COUNT', 1000);
    cursor = next;
    keys.push(...found);
  } while (cursor !== '0');
  const state = {};
  for (const key of keys.sort()) {
    const type = await client.type(key);
    let stored;
    if (type === 'string') stored = { type, value: await client.get(key) };
    else if (type === 'hash') stored = { type, value: Object.entries(await client.hgetall(key)).flat() };
    else if (type === 'list') stored = { type, value: await client.lrange(key, 0, -1) };
    else if (type === 'set') stored = { type, value: (await client.smembers(key)).sort() };
    else if (type === 'zset') stored = { type, value: await client.zrange(key, '0', '-1', 'WITHSCORES') };
    else if (type === 'stream') stored = { type, value: (await client.xrange(key, '-', '+')).map(([, fields]) => fields) };
    else throw new Error(`${key}: type ${type} has no notation in the vectors`);
    const pttl = await client.pttl(key);
    if (pttl >= 0) {
      const ttl = ttls.find((t) => withinTtl(pttl, t));
      if (ttl === undefined) throw new Error(`${key}: PTTL ${pttl} is within none of the case's TTLs (${ttls.join(', ')})`);
      stored.ttl = ttl;
    }
    state[key] = stored;
  }
  return state;
}

/**
 * A state with its keys sorted and what the format compares in any order (a hash's pairs, a set's
 * members) sorted: a hash too big for a listpack lists its fields in no set order.
 */
function canonical(state) {
  return Object.fromEntries(Object.entries(state).sort(([a], [b]) => (a < b ? -1 : 1)).map(([key, s]) => {
    if (s.type === 'set') return [key, { ...s, value: [...s.value].sort() }];
    if (s.type === 'hash') return [key, { ...s, value: pairs(s.value).map((p) => JSON.stringify(p)).sort() }];
    return [key, s];
  }));
}

/** The TTLs a key of `after` may show: those of `before` and every integer of ARGV, smallest first. */
function candidateTtls(c) {
  const ttls = new Set(Object.values(c.before).flatMap((s) => (s.ttl === undefined ? [] : [s.ttl])));
  for (const a of c.argv) if (/^[1-9]\d*$/.test(a)) ttls.add(Number(a));
  return [...ttls].sort((a, b) => a - b);
}

async function recordCase(client, script, source, c) {
  for (const field of ['name', 'before', 'keys', 'argv']) {
    if (c[field] === undefined) throw new Error(`${script}: a case without ${field}`);
  }
  if (c.argv.some((a) => typeof a !== 'string')) throw new Error(`${script} / ${c.name}: ARGV must be strings`);
  const queue = `record-${randomBytes(4).toString('hex')}`;
  const bound = bind({ before: c.before, keys: c.keys, argv: c.argv }, queue);
  const ttls = candidateTtls(c);
  await writeState(client, bound.before);
  const written = unbind(await readState(client, queue, ttls), queue);
  if (JSON.stringify(canonical(written)) !== JSON.stringify(canonical(c.before))) {
    throw new Error(`${script} / ${c.name}: before does not read back as written (a repeated field or member?)\n${JSON.stringify(written)}`);
  }
  let reply;
  try {
    reply = await client.eval(source, bound.keys.length, ...bound.keys, ...bound.argv);
  } catch (err) {
    throw new Error(`${script} / ${c.name}: the script failed: ${err.message}`);
  }
  reply = unbind(reply ?? null, queue);
  if (typeof c.reply === 'function') reply = c.reply(reply);
  const after = unbind(await readState(client, queue, ttls), queue);
  return { name: c.name, before: c.before, keys: c.keys, argv: c.argv, reply, after };
}

async function main() {
  const server = await startRedis();
  const client = new Redis(server.url, { maxRetriesPerRequest: null });
  const differ = [];
  try {
    for (const file of caseFiles()) {
      const { default: vector } = await import(join(CASES_DIR, file));
      const source = readFileSync(join(root, 'lua', vector.script), 'utf8');
      const cases = [];
      for (const c of vector.cases) cases.push(await recordCase(client, vector.script, source, c));
      const text = `${JSON.stringify({ script: vector.script, about: vector.about, cases }, null, 2)}\n`;
      const target = join(root, 'conformance', vector.script.replace(/\.lua$/, '.json'));
      let current = '';
      try { current = readFileSync(target, 'utf8'); } catch { /* a new vector */ }
      if (check) {
        if (current !== text) differ.push(target);
      } else if (current !== text) {
        writeFileSync(target, text);
        console.log(`wrote ${target} (${cases.length} cases)`);
      } else {
        console.log(`unchanged ${target}`);
      }
    }
  } finally {
    client.disconnect();
    await server.stop();
  }
  if (check && differ.length > 0) {
    console.error(`differ from a fresh recording:\n  ${differ.join('\n  ')}`);
    process.exitCode = 1;
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
