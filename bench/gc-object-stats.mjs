// node bench/gc-object-stats.mjs <log>: what V8's own marking found live at each major GC of a run
// made with --trace-gc-object-stats, beside the run's own lines. Made for the soak:
//   node --expose-gc --trace-gc-object-stats bench/memory-soak.mjs --jobs 200000 > soak.log
//   node bench/gc-object-stats.mjs soak.log
// The soak's "heap after gc()" is process.memoryUsage().heapUsed read after two forced GCs; V8's
// object statistics are the bytes of the objects that GC marked live and found dead. Where the two
// differ, the difference is V8's accounting of its pages, not objects anything holds
// (bench/README.md, Memory).
import { readFileSync } from 'node:fs';

const [file] = process.argv.slice(2);
if (!file) throw new Error('usage: node bench/gc-object-stats.mjs <log of a run with --trace-gc-object-stats>');

const mb = (bytes) => (bytes / 1024 / 1024).toFixed(2);
/** Per GC id: bytes of objects live and dead, by instance type, summed. */
const totals = new Map();
/** The GC ids since the last line of the run's own output. */
let pending = [];

for (const line of readFileSync(file, 'utf8').split('\n')) {
  if (!line.startsWith('{')) {
    if (pending.length > 0 && line.trim() !== '') {
      console.log(`  major GCs before the next line: ${pending.map((id) => `#${id} live ${mb(totals.get(id).live)} MB, dead ${mb(totals.get(id).dead)} MB`).join('; ')}`);
      pending = [];
    }
    console.log(line);
    continue;
  }
  let record;
  try {
    record = JSON.parse(line);
  } catch {
    continue; // a line of the trace cut by the run's own output
  }
  if (record.type !== 'instance_type_data') continue;
  if (!totals.has(record.id)) {
    totals.set(record.id, { live: 0, dead: 0 });
    pending.push(record.id);
  }
  totals.get(record.id)[record.key] += record.overall;
}
