// The page's wiring: the SSE stream into the timeline, the event log, and the renew-interval
// control that starts a demo job (POST /locks/demo) and tells how it went.
import { LockTimeline } from './timeline.js';

const EVENT_TYPES = ['acquired', 'renewed', 'released', 'renewalFailed', 'stalled', 'heartbeatLate', 'heartbeatError', 'cancelled'];
const $ = (id) => document.getElementById(id);
const timeline = new LockTimeline($('timeline'));
/** The demo job being watched, as POST /locks/demo answered it. */
let demo;

function log(line) {
  const stamp = new Date().toISOString().slice(11, 23);
  const shown = $('log').textContent.split('\n').slice(0, 199).join('\n');
  $('log').textContent = `${stamp}  ${line}\n${shown}`;
}

function describe(event) {
  const job = event.jobIds ? `#${event.jobIds.join(', #')}` : event.jobId !== undefined ? `#${event.jobId}` : '';
  const details = {
    acquired: () => `acquired (attempt ${event.attemptsStarted})`,
    renewed: () => `renewed (round trip ${event.roundTripMs} ms)`,
    released: () => `released: ${event.reason}`,
    renewalFailed: () => `renewal failed: ${event.code} (${event.reason})`,
    stalled: () => `stalled, moved to ${event.movedTo} (stalled ${event.stalledCount}×)`,
    heartbeatLate: () => `heartbeat late by ${event.lateByMs} ms, margin ${event.marginMs} ms`,
    heartbeatError: () => `heartbeat error: ${event.error}`,
    cancelled: () => `cancelled by the ${event.by}${event.reason ? `: ${event.reason}` : ''}`,
  };
  return `${event.queue} ${job} ${details[event.type]?.() ?? event.type}  [worker ${String(event.workerId).slice(0, 8)}]`;
}

function connect() {
  const source = new EventSource('/locks/events');
  source.onopen = () => { $('status').textContent = 'live: streaming /locks/events'; };
  source.onerror = () => { $('status').textContent = 'the stream dropped: reconnecting…'; };
  for (const type of EVENT_TYPES) {
    source.addEventListener(type, (message) => {
      const event = JSON.parse(message.data);
      const jobs = timeline.apply(event);
      log(describe(event));
      if (demo && jobs.some((job) => job.queue === demo.queue && job.jobId === demo.jobId)) tell();
    });
  }
}

/** The renew interval against lockDuration: which side of the rule the next demo is on. */
function showRule() {
  const renewMs = Number($('renewMs').value);
  const lockMs = Number($('lockMs').value);
  $('renewOut').textContent = `${renewMs} ms`;
  const safe = renewMs < lockMs;
  $('rule').className = safe ? 'safe' : 'unsafe';
  $('rule').textContent = safe
    ? `${renewMs} ms < lockDuration ${lockMs} ms: each renewal re-sets the TTL before it runs out; the job stays owned.`
    : `${renewMs} ms ≥ lockDuration ${lockMs} ms: the lock lapses before each renewal (unsafeLockRenewTime, for demos only); the job stalls.`;
}

/** The watched demo job's story so far, and its end once its worker closed. */
function tell(finished = false) {
  const job = timeline.jobs.get(`${demo.queue}/${demo.jobId}`);
  const story = job ? timeline.story(job) : 'waiting for its first event';
  const lapses = job ? timeline.lapses(job) : 0;
  const lapsed = lapses > 0 ? ` The lock lapsed ${lapses}×.` : '';
  $('outcome').textContent = `Demo job #${demo.jobId} (renew ${demo.renewMs} ms, lockDuration ${demo.lockMs} ms): ${story}.${lapsed}${finished ? ' Its worker closed.' : ''}`;
  $('outcome').dataset.state = finished ? 'finished' : 'running';
}

async function runDemo() {
  const body = { renewMs: Number($('renewMs').value), lockMs: Number($('lockMs').value), workMs: Number($('workMs').value) };
  $('run').disabled = true;
  $('outcome').textContent = 'Starting a demo job…';
  $('outcome').dataset.state = 'starting';
  try {
    const response = await fetch('/locks/demo', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const answer = await response.json();
    if (!response.ok) throw new Error(answer.message ?? response.statusText);
    demo = answer;
    timeline.annotate(demo.queue, demo.jobId, { demo: true, lockMs: demo.lockMs, renewMs: demo.renewMs });
    log(`demo job #${demo.jobId} started: renew every ${demo.renewMs} ms, lockDuration ${demo.lockMs} ms, works ${demo.workMs} ms, sweeps every ${demo.stalledInterval} ms`);
    tell();
    await untilDemoEnds(demo.jobId);
    tell(true);
  } catch (error) {
    $('outcome').textContent = `Could not start a demo job: ${error.message}`;
    $('outcome').dataset.state = 'refused';
  } finally {
    $('run').disabled = false;
  }
}

/** Until the server's demo worker closed (its job completed or failed for good). */
async function untilDemoEnds(jobId) {
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    const { running } = await (await fetch('/locks/demo')).json();
    if (running?.jobId !== jobId) return;
  }
}

$('renewMs').addEventListener('input', showRule);
$('lockMs').addEventListener('input', showRule);
$('run').addEventListener('click', () => void runDemo());
$('pause').addEventListener('change', (event) => timeline.setPaused(event.target.checked));
showRule();
connect();
setInterval(() => { if (timeline.frozenAt === undefined) timeline.draw(); }, 100);
timeline.draw();
