// Reading the workers' ledgers: what each handler did, as the workers wrote it.
import { existsSync, readFileSync } from 'node:fs';

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

/** Jobs a worker has started and not yet seen end (accepted, refused or failed) at time `at`. */
export function openAttempts(records, at = Infinity) {
  const open = new Map();
  for (const record of records) {
    if (record.t > at) break;
    const key = `${record.id}#${record.ats}`;
    if (record.type === 'start') open.set(key, record);
    if (record.type === 'accepted' || record.type === 'refused' || record.type === 'failed') open.delete(key);
  }
  return [...open.values()];
}
