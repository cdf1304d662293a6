// What to undo when the harness itself is stopped by a signal mid-scenario (a test's timeout sends
// SIGTERM): the scenarios' finally blocks do not run then, and their redis-servers and worker
// processes would outlive the harness. Each scenario registers its undo while it runs. The same
// undo runs when a scenario throws while others run beside it (--parallel): the harness exits
// with the error, and the others' finally blocks would not run either.
const pending = new Set();

/** Registers `undo` (bounded, it must not hang) until the returned function is called. */
export function onInterrupt(undo) {
  pending.add(undo);
  return () => pending.delete(undo);
}

/** Runs every registered undo (each scenario still running stops its servers and processes). */
export async function undoAll() {
  await Promise.allSettled([...pending].map((undo) => undo()));
}

/** On SIGINT or SIGTERM: every registered undo, then exit with the signal's status. */
export function undoOnSignals() {
  for (const [signal, status] of [['SIGINT', 130], ['SIGTERM', 143]]) {
    process.once(signal, async () => {
      await undoAll();
      process.exit(status);
    });
  }
}
