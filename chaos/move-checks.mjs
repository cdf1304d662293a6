// The checks of the scenario whose handlers move their own jobs out of active (on top of the common
// ones, checks.mjs): jobs run in steps (updateData, moveToDelayed-7, DelayedError) and jobs given
// back for a 429 (updateData, worker.rateLimit, RateLimitError: moveJobFromActiveToWait-11), with
// worker processes killed -9 right around those moves. What Redis holds at the end and its event
// stream against the ledgers.
import { landedRuns, landingOf, releaseFigures, releaseProblems, releasesAfterFaults, sweptOrFinished, violations } from './checks.mjs';
import { openAttempts } from './ledger.mjs';

const isStepMove = (e) => e.event === 'delayed';
const isGiveBack = (e) => e.event === 'waiting' && e.prev === 'active';

/** The events that land a `moving` (a step) or `limiting` (a give-back) record's move. */
const moveLandingFor = (record) => (record.type === 'moving' ? isStepMove : record.type === 'limiting' ? isGiveBack : undefined);

/** The runs (`${id}#${ats}`) whose move out of active landed, whether or not their worker lived to hear it. */
export const movedRuns = (records, events) => landedRuns(records, events, moveLandingFor);

/**
 * `kinds` maps each job id to its plan ('steps', 'limited' or 'plain'); `jobs` each id to its final
 * hash; `events` is the queue's stream; `faults` the kills, those aimed at a move naming it
 * ({ around: 'moving' | 'limiting', id, ats }).
 */
export function checkMoves({ ids, kinds, jobs, records, events, faults, timing }) {
  const starts = records.filter((r) => r.type === 'start');
  const ofKind = (kind) => ids.filter((id) => kinds.get(id) === kind);
  const eventsOf = (id, match) => events.filter((e) => e.jobId === id && match(e));

  // A step job completed by a run of its second step: the data says step 1 saved its progress (the
  // fencing number of its run, which ledgered the move), and the result comes from a later run.
  const stepsIncomplete = [];
  for (const id of ofKind('steps')) {
    const hash = jobs.get(id);
    const data = JSON.parse(hash?.data ?? '{}');
    const result = JSON.parse(hash?.returnvalue ?? 'null');
    const stepOne = records.find((r) => r.type === 'moving' && r.id === id && r.ats === data.stepped);
    if (!stepOne || result?.step !== 2 || result.stepped !== data.stepped || !(result.ats > data.stepped)) {
      stepsIncomplete.push(`${id} (data ${JSON.stringify(data)}, result ${JSON.stringify(result)})`);
    }
  }

  // A move lands once per job at most: the run after it sees the saved progress (or mark) and
  // completes. A job moved to delayed is due when its handler asked (the event says so) and does
  // not run again before then.
  const movedTwice = [];
  const earlyRuns = [];
  for (const id of ofKind('steps')) {
    const moves = eventsOf(id, isStepMove);
    if (moves.length > 1) movedTwice.push(`${id} (${moves.length} moves to delayed)`);
    for (const move of moves) {
      const mover = records.filter((r) => r.type === 'moving' && r.id === id && r.t <= move.at).at(-1);
      const next = mover && starts.find((r) => r.id === id && r.ats > mover.ats);
      if (!mover) earlyRuns.push(`${id}: a move to delayed at ${move.at} that no run ledgered`);
      else if (Number(move.delay) !== mover.dueAt) earlyRuns.push(`${id}: delayed until ${move.delay}, its handler asked ${mover.dueAt}`);
      else if (next && next.t < mover.dueAt) earlyRuns.push(`${id}: ran at ${next.t}, ${mover.dueAt - next.t} ms before its due time`);
    }
  }
  for (const id of ofKind('limited')) {
    const giveBacks = eventsOf(id, isGiveBack);
    if (giveBacks.length > 1) movedTwice.push(`${id} (${giveBacks.length} give-backs)`);
  }
  // Nothing moves a plain job out of active but its finish, nor moves a job that was not planned to.
  const strayMoves = ids.filter((id) => (kinds.get(id) !== 'steps' && eventsOf(id, isStepMove).length) || (kinds.get(id) !== 'limited' && eventsOf(id, isGiveBack).length));

  // No move counts an attempt (nor a kill's rerun): every completed job made one attempt, its last.
  const countedAttempts = ids.filter((id) => jobs.get(id) && Number(jobs.get(id).atm ?? 0) !== 1).map((id) => `${id} (${kinds.get(id)}, atm ${jobs.get(id).atm})`);
  // A job given back for a 429 ran again and completed, its mark saved by the run that gave it back.
  const limitedUnmarked = ofKind('limited').filter((id) => JSON.parse(jobs.get(id)?.data ?? '{}').limitedAt === undefined);

  // The kills aimed at a move, by where they landed in the killed run: before its data write
  // landed; after it, the move never landing (the job stayed active until the sweep); with the move
  // in flight (it landed after the kill); after the move landed. A move landed in the kill's own
  // ms counts as in flight.
  const aimed = faults.filter((f) => f.around);
  const tally = () => ({ nothingLanded: 0, savedNotMoved: 0, inFlight: 0, afterLanding: 0 });
  const killsAroundMoves = { steps: tally(), giveBacks: tally() };
  const aimedKills = aimed.map((fault) => {
    const step = fault.around === 'moving';
    const landed = landingOf({ id: fault.id, ats: fault.ats, t: fault.movingAt }, events, starts, step ? isStepMove : isGiveBack);
    const data = JSON.parse(jobs.get(fault.id)?.data ?? '{}');
    const saved = (step ? data.stepped : data.limitedAt) === fault.ats;
    const where = landed ? (landed.at >= fault.at ? 'inFlight' : 'afterLanding') : saved ? 'savedNotMoved' : 'nothingLanded';
    killsAroundMoves[step ? 'steps' : 'giveBacks'][where]++;
    return `${step ? 'step' : '429'} ${fault.id}#${fault.ats} +${fault.offsetMs} ms: ${where}${landed ? ` (landed at +${landed.at - fault.movingAt} ms)` : ''}`;
  });

  // Out of active after a kill: each job the victim held left active within lockDuration +
  // stalledInterval, given back by the sweep (`stalled`), or by its own move or its finish landing
  // (in flight at the kill, its worker's record lost with it). The rerun itself may then wait longer: a sweep puts the job behind those in wait,
  // and each worker.rateLimit stops the whole queue for a while; that wait is the load's, not the
  // recovery's, so fault→rerun is reported and not bounded here.
  const leavesActive = (e) => sweptOrFinished(e) || isStepMove(e) || isGiveBack(e);
  const releases = releasesAfterFaults({ faults, records, events, held: openAttempts, leavesActive });

  return {
    ...releaseFigures(releases, timing),
    stepJobs: ofKind('steps').length,
    limitedJobs: ofKind('limited').length,
    stepsMoved: ofKind('steps').filter((id) => eventsOf(id, isStepMove).length).length,
    givenBack: ofKind('limited').filter((id) => eventsOf(id, isGiveBack).length).length,
    stepsIncomplete,
    movedTwice,
    earlyRuns,
    strayMoves,
    countedAttempts,
    limitedUnmarked,
    killsAroundMoves,
    killsAimed: aimed.length,
    aimedKills,
  };
}

/** The verdict of the row: the common checks, then the moves'. */
export function moveViolations(row) {
  const problems = [...violations(row, { boundRecovery: false }), ...releaseProblems(row, 'a job held at a kill')];
  if (row.stepsIncomplete.length) problems.push(`step jobs not completed by their second step: ${row.stepsIncomplete.join('; ')}`);
  if (row.movedTwice.length) problems.push(`jobs moved out of active more than once: ${row.movedTwice.join(', ')}`);
  if (row.earlyRuns.length) problems.push(`moved jobs run early: ${row.earlyRuns.join('; ')}`);
  if (row.strayMoves.length) problems.push(`jobs moved that were not planned to: ${row.strayMoves.join(', ')}`);
  if (row.countedAttempts.length) problems.push(`jobs whose attemptsMade is not 1: ${row.countedAttempts.join(', ')}`);
  if (row.limitedUnmarked.length) problems.push(`jobs given back for a 429 completed without its mark: ${row.limitedUnmarked.join(', ')}`);
  if (!row.stepsMoved || !row.givenBack) problems.push(`${row.stepsMoved} step jobs moved to delayed and ${row.givenBack} given back: the scenario did not exercise both moves`);
  const total = (tally) => Object.values(tally).reduce((sum, n) => sum + n, 0);
  if (!total(row.killsAroundMoves.steps) || !total(row.killsAroundMoves.giveBacks)) problems.push('no kill landed around a move to delayed, or none around a give-back');
  return problems;
}

/** The figures of the row that the table has no column for. */
export function formatMoves(row) {
  const where = ({ nothingLanded, savedNotMoved, inFlight, afterLanding }) =>
    `${nothingLanded} before the data write landed, ${savedNotMoved} after it (the move never landed), ${inFlight} with the move in flight, ${afterLanding} after it landed`;
  return `  jobs held at a kill out of active within ${row.maxReleaseMs ?? '-'} ms (bound ${row.releaseBoundMs}), their reruns started within ${row.maxRecoveryMs ?? '-'} ms\n` +
    `  ${row.stepJobs} step jobs (${row.stepsMoved} moved to delayed by step 1), ${row.limitedJobs} given a 429 (${row.givenBack} given back); ` +
    `${row.plannedPickups} pickups after a landed move; kills aimed at a move to delayed: ${where(row.killsAroundMoves.steps)}; ` +
    `at a give-back: ${where(row.killsAroundMoves.giveBacks)}; attemptsMade other than 1: ${row.countedAttempts.length}; worker 'error' events: ${row.workerErrors}\n` +
    `  aimed kills (ms after the handler ledgered its move): ${row.aimedKills.join(', ') || 'none'}`;
}
