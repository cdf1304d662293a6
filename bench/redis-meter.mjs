// What one phase cost the Redis server: CPU (INFO cpu, sys + user) and commands by name
// (INFO commandstats). A script's inner commands are counted under their own names beside the
// EVALSHA that ran them, so "commands" is every command Redis executed, not round trips.

function parseInfo(text) {
  const fields = {};
  for (const line of text.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon > 0) fields[line.slice(0, colon)] = line.slice(colon + 1);
  }
  return fields;
}

/** One reading of the server's CPU seconds and per-command call counts. */
export async function snapshot(client) {
  const info = parseInfo(await client.info('cpu') + '\r\n' + await client.info('commandstats'));
  const calls = {};
  for (const [key, value] of Object.entries(info)) {
    if (!key.startsWith('cmdstat_')) continue;
    calls[key.slice('cmdstat_'.length)] = Number(/calls=(\d+)/.exec(value)[1]);
  }
  return { cpuSeconds: Number(info.used_cpu_sys) + Number(info.used_cpu_user), calls };
}

/** The difference of two readings; the meter's own INFO calls are left out. */
export function delta(before, after) {
  const calls = {};
  let total = 0;
  for (const [name, count] of Object.entries(after.calls)) {
    if (name === 'info') continue;
    const diff = count - (before.calls[name] ?? 0);
    if (diff > 0) { calls[name] = diff; total += diff; }
  }
  return { cpuMicros: (after.cpuSeconds - before.cpuSeconds) * 1e6, commands: total, calls };
}
