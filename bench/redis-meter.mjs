// What one phase cost the Redis server: CPU (INFO cpu, sys + user) and commands by name with the
// time Redis spent in each (INFO commandstats calls and usec). A script's inner commands are
// counted under their own names beside the EVALSHA that ran them, so "commands" is every command
// Redis executed, not round trips.

function parseInfo(text) {
  const fields = {};
  for (const line of text.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon > 0) fields[line.slice(0, colon)] = line.slice(colon + 1);
  }
  return fields;
}

/** One reading of the server's CPU seconds and per-command call counts and microseconds. */
export async function snapshot(client) {
  const info = parseInfo(await client.info('cpu') + '\r\n' + await client.info('commandstats'));
  const calls = {};
  const usec = {};
  for (const [key, value] of Object.entries(info)) {
    if (!key.startsWith('cmdstat_')) continue;
    const name = key.slice('cmdstat_'.length);
    calls[name] = Number(/calls=(\d+)/.exec(value)[1]);
    usec[name] = Number(/usec=(\d+)/.exec(value)[1]);
  }
  return { cpuSeconds: Number(info.used_cpu_sys) + Number(info.used_cpu_user), calls, usec };
}

/**
 * The difference of two readings; the meter's own INFO calls are left out. A script's usec holds
 * its inner commands' usec too: what is left after them is the script's own (Lua) time.
 */
export function delta(before, after) {
  const calls = {};
  const usec = {};
  let total = 0;
  for (const [name, count] of Object.entries(after.calls)) {
    if (name === 'info') continue;
    const diff = count - (before.calls[name] ?? 0);
    if (diff > 0) {
      calls[name] = diff;
      usec[name] = after.usec[name] - (before.usec[name] ?? 0);
      total += diff;
    }
  }
  return { cpuMicros: (after.cpuSeconds - before.cpuSeconds) * 1e6, commands: total, calls, usec };
}
