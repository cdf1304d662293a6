// Reading the workers' ledgers: what each handler did, as the workers wrote it.
import { existsSync, readFileSync } from 'node:fs';

/** The records that end a run: its result accepted or refused, its failure, or its job leaving unfinished. */
const ENDS = new Set(['accepted', 'refused', 'failed', 'left']);

/** Every ledger record of every worker, in time order. */
export function readLedgers(members) {
  const records = [];
  for (const { ledgerFile } of members) {
    if (!existsSync(ledgerFile)) continue;
    for (const line of readFileSync(ledgerFile, 'utf8').split('\n')) {
      if (line) records.push(JSON.parse(line));
    }
  }
  return records.sort((a, b) => a.t - b.t);
}

/** The ledger records of one worker. */
export function readLedger(member) {
  return readLedgers([member]);
}

/**
 * Jobs a worker has started and not yet seen end (accepted, refused or failed, or left unfinished:
 * moved to delayed or given back for a rate limit) at time `at`. With `opens` 'pickup' (workers
 * with prefetch ledger each pickup): the jobs it held, started or still waiting for a handler.
 */
export function openAttempts(records, at = Infinity, opens = 'start') {
  const open = new Map();
  for (const record of records) {
    if (record.t > at) break;
    const key = `${record.id}#${record.ats}`;
    if (record.type === opens && !open.has(key)) open.set(key, record);
    if (ENDS.has(record.type)) open.delete(key);
  }
  return [...open.values()];
}
