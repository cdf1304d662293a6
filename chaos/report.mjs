// The harness's table: one row per scenario, as printed by `npm run chaos` and kept in docs/reliability.md.

const COLUMNS = [
  ['scenario', (r) => r.scenario],
  ['jobs', (r) => r.jobs],
  ['lost', (r) => (r.lostInWindow ? `${r.lost} (+${r.lostInWindow} in window)` : r.lost)],
  ['left', (r) => r.left],
  ['failed', (r) => r.failed],
  ['stale accepted', (r) => r.staleAccepted],
  ['dup. runs (untraced)', (r) => `${r.duplicates} (${r.untraced})`],
  ['late results refused', (r) => (r.refused ? `${r.refused} (${r.refusedCodes.join('/')})` : '0')],
  ['fenced writes refused', (r) => r.fencedSinkRefusals],
  ['crashes', (r) => r.crashes],
  ['faults', (r) => r.faults],
  // Out of active is what the protocol bounds (the sweep); the rerun waits its turn in wait after it.
  ['max fault→out of active / rerun ms (bound)', (r) => `${r.maxReleaseMs ?? '-'} / ${r.maxRecoveryMs ?? '-'} (${r.releaseBoundMs ?? r.recoveryBoundMs})`],
  ['verdict', (r) => (r.problems.length ? 'FAIL' : 'ok')],
];

/** A Markdown table of the rows. */
export function formatTable(rows) {
  const cells = rows.map((row) => COLUMNS.map(([, get]) => String(get(row))));
  const header = COLUMNS.map(([name]) => name);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  const line = (values) => `| ${values.map((v, i) => v.padEnd(widths[i])).join(' | ')} |`;
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...cells.map(line)].join('\n');
}

/** The figures of a failover row that the table has no column for: the failover, the recovery, the causes. */
export function formatFailover(row) {
  const causes = Object.entries(row.causes).filter(([, n]) => n > 0).map(([cause, n]) => `${n} ${cause}`).join(', ') || 'none';
  return [
    `  failover: ${row.promotion} promotion, cluster ok ${row.failoverMs} ms after the kill; first completion on the new master after ${row.firstCompletionMs} ms, ` +
      `every worker completing again after ${row.workersRecoveredMs ?? 'never'} ms; ${row.heldAtKill} jobs held at the kill, rerun within ${row.maxRecoveryMs ?? '-'} ms (bound ${row.recoveryBoundMs})`,
    `  jobs ${row.jobs}: ${row.completed} completed, ${row.lostInWindow} adds lost in the window, ${row.lost} lost otherwise; ` +
      `second runs ${row.duplicates} (${causes}; untraced ${row.untraced}), completed twice ${row.completedTwice}, attemptsStarted repeated ${row.fenceRepeated}, late results refused ${row.refused}, worker 'error' events ${row.workerErrors}`,
  ].join('\n');
}
