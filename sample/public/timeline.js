// The lock timeline: a model of each job's lock, built from the LockManager's events, drawn as SVG
// rows on a time axis that ends at "now". No framework: the page's control (control.js) feeds it.

/** How much time the axis shows, ms. */
export const WINDOW_MS = 20_000;
/** Rows drawn at most: the jobs seen last. */
const MAX_ROWS = 12;
const SVG = 'http://www.w3.org/2000/svg';
const LABEL_WIDTH = 170;
const AXIS_HEIGHT = 24;
const ROW_HEIGHT = 30;

/**
 * One job per row: its ownerships (spans: acquire → release, each renewal inside), the marks
 * (stalled, lost, cancelled) and, for the demo's jobs, the lockDuration each acquire and renewal set.
 */
export class LockTimeline {
  constructor(svg) {
    this.svg = svg;
    this.jobs = new Map();
    /** Browser clock minus server clock, at best (the smallest delay seen): the events carry server times. */
    this.skew = Infinity;
    this.frozenAt = undefined;
  }

  /** Now, on the server's clock; the paused moment while paused. */
  now() {
    if (this.frozenAt !== undefined) return this.frozenAt;
    return Date.now() - (Number.isFinite(this.skew) ? this.skew : 0);
  }

  setPaused(paused) {
    this.frozenAt = paused ? this.now() : undefined;
    this.draw();
  }

  /** Tells the row of a demo job its lockDuration, so it can shade when the lock was held and when it had lapsed. */
  annotate(queue, jobId, info) {
    Object.assign(this.job(queue, jobId), info);
  }

  job(queue, jobId) {
    const key = `${queue}/${jobId}`;
    let job = this.jobs.get(key);
    if (!job) {
      job = { key, queue, jobId, spans: [], marks: [], history: [], firstAt: Infinity, lastAt: 0 };
      this.jobs.set(key, job);
    }
    return job;
  }

  /** One event of /locks/events; returns the jobs it was about. */
  apply(event) {
    this.skew = Math.min(this.skew, Date.now() - event.at);
    const ids = event.type === 'renewed' ? event.jobIds : event.jobId !== undefined ? [event.jobId] : [];
    const jobs = ids.map((id) => this.job(event.queue, id));
    for (const job of jobs) {
      job.firstAt = Math.min(job.firstAt, event.at);
      job.lastAt = Math.max(job.lastAt, event.at);
      const open = job.spans.at(-1)?.end === undefined ? job.spans.at(-1) : undefined;
      switch (event.type) {
        case 'acquired':
          job.spans.push({ start: event.at, attempt: event.attemptsStarted, workerId: event.workerId, renewals: [] });
          job.history.push(`acquired (attempt ${event.attemptsStarted})`);
          break;
        case 'renewed':
          open?.renewals.push(event.at);
          job.history.push('renewed');
          break;
        case 'released':
          if (open) Object.assign(open, { end: event.at, endReason: event.reason });
          job.history.push(`released (${event.reason})`);
          break;
        case 'renewalFailed':
          job.marks.push({ kind: 'lost', at: event.at, title: `lost: renewal answered ${event.code} (${event.reason})` });
          job.history.push(`lost (${event.code})`);
          break;
        case 'stalled':
          job.marks.push({ kind: 'stall', at: event.at, title: `stalled: a sweep found no lock, moved to ${event.movedTo} (stalled ${event.stalledCount}×)` });
          job.history.push(`stalled → ${event.movedTo}`);
          break;
        case 'cancelled':
          job.marks.push({ kind: 'lost', at: event.at, title: `cancelled by the ${event.by}${event.reason ? `: ${event.reason}` : ''}` });
          job.history.push('cancelled');
          break;
      }
    }
    return jobs;
  }

  /** What happened to a job, in order, repeated renewals counted: "acquired (attempt 1), renewed ×4, released (completed)". */
  story(job) {
    const parts = [];
    for (const step of job.history) {
      const last = parts.at(-1);
      if (step === 'renewed' && last?.step === 'renewed') last.count++;
      else parts.push({ step, count: 1 });
    }
    return parts.map(({ step, count }) => (count > 1 ? `${step} ×${count}` : step)).join(', ');
  }

  /** A span cut into the stretches where its lock was held and where it had lapsed (known only with lockMs). */
  lockStretches(job, span, now) {
    if (!job.lockMs) return [];
    const points = [span.start, ...span.renewals];
    const end = span.end ?? now;
    const stretches = [];
    points.forEach((from, i) => {
      const next = points[i + 1] ?? end;
      const heldUntil = from + job.lockMs;
      stretches.push({ kind: 'held', from, to: Math.min(heldUntil, next) });
      if (heldUntil < next) stretches.push({ kind: 'lapse', from: heldUntil, to: next });
    });
    return stretches;
  }

  /** How many times a job's lock lapsed while a worker still ran it. */
  lapses(job) {
    const now = this.now();
    return job.spans.flatMap((span) => this.lockStretches(job, span, now)).filter((s) => s.kind === 'lapse').length;
  }

  visibleJobs(now) {
    const since = now - WINDOW_MS;
    return [...this.jobs.values()]
      .filter((job) => job.lastAt >= since || job.spans.some((span) => span.end === undefined))
      .sort((a, b) => a.firstAt - b.firstAt)
      .slice(-MAX_ROWS);
  }

  draw() {
    const now = this.now();
    const width = Math.max(600, this.svg.clientWidth || 1000);
    const rows = this.visibleJobs(now);
    const height = AXIS_HEIGHT + Math.max(1, rows.length) * ROW_HEIGHT + 6;
    const plotWidth = width - LABEL_WIDTH - 12;
    const x = (t) => LABEL_WIDTH + ((t - (now - WINDOW_MS)) / WINDOW_MS) * plotWidth;
    const svg = this.svg;
    svg.setAttribute('viewBox', `0 0 ${width} ${height}`);
    svg.setAttribute('height', String(height));
    svg.replaceChildren();
    const clip = add(add(svg, 'defs'), 'clipPath', { id: 'plot' });
    add(clip, 'rect', { x: LABEL_WIDTH, y: 0, width: plotWidth, height });
    for (let ago = WINDOW_MS; ago >= 0; ago -= 2_000) {
      const at = x(now - ago);
      add(svg, 'line', { x1: at, x2: at, y1: AXIS_HEIGHT - 4, y2: height, stroke: '#eef0f4' });
      add(svg, 'text', { x: at, y: 14, 'text-anchor': 'middle', 'font-size': 11, fill: '#6b7385' }).textContent = ago === 0 ? 'now' : `−${ago / 1000} s`;
    }
    if (rows.length === 0) {
      add(svg, 'text', { x: LABEL_WIDTH + 8, y: AXIS_HEIGHT + 19, 'font-size': 12, fill: '#6b7385' }).textContent = 'no job holds a lock yet: run a demo job';
    }
    rows.forEach((job, index) => this.drawRow(add(svg, 'g', {
      class: 'row', 'data-queue': job.queue, 'data-job': job.jobId, 'data-demo': job.demo ? 'true' : 'false',
      transform: `translate(0 ${AXIS_HEIGHT + index * ROW_HEIGHT})`,
    }), job, x, now));
  }

  drawRow(row, job, x, now) {
    const label = `${job.queue} #${job.jobId}`;
    // Long ids (a scheduler's repeat:<id>:<slot>) are cut to the label column; the whole one is the tooltip.
    const shown = label.length > 25 ? `${label.slice(0, 24)}…` : label;
    add(row, 'text', { x: 6, y: job.demo ? 13 : 19, 'font-size': 12, 'font-weight': job.demo ? 700 : 400, fill: '#1d2330' }, label).append(shown);
    if (job.demo) add(row, 'text', { x: 6, y: 26, 'font-size': 10, fill: '#4a5364' }).append(`renew ${job.renewMs} ms · lock ${job.lockMs} ms`);
    const plot = add(row, 'g', { 'clip-path': 'url(#plot)' });
    for (const span of job.spans) {
      const end = span.end ?? now;
      add(plot, 'rect', { class: 'owned', x: x(span.start), y: 11, width: Math.max(1, x(end) - x(span.start)), height: 8, fill: '#7aa7e0' },
        `attempt ${span.attempt} on worker ${span.workerId.slice(0, 8)}: ${span.end === undefined ? 'running' : `released (${span.endReason})`}`);
      for (const stretch of this.lockStretches(job, span, now)) {
        add(plot, 'rect', {
          class: stretch.kind, x: x(stretch.from), y: 6, width: Math.max(1, x(stretch.to) - x(stretch.from)), height: 18,
          fill: stretch.kind === 'held' ? '#2f9e57' : '#d92d20', opacity: 0.35,
        }, stretch.kind === 'held' ? 'lock held' : 'lock lapsed: no key, the job is anyone\'s');
      }
      add(plot, 'circle', { class: 'acquire', cx: x(span.start), cy: 15, r: 4, fill: '#1f5fbf' }, `acquired, attempt ${span.attempt}`);
      for (const at of span.renewals) add(plot, 'line', { class: 'renew', x1: x(at), x2: x(at), y1: 4, y2: 26, stroke: '#1d2330', 'stroke-width': 2 }, 'renewed');
      if (span.end !== undefined) add(plot, 'line', { class: 'release', 'data-reason': span.endReason, x1: x(span.end), x2: x(span.end), y1: 8, y2: 22, stroke: '#1f5fbf', 'stroke-width': 3 }, `released: ${span.endReason}`);
    }
    for (const mark of job.marks) {
      const at = x(mark.at);
      const d = mark.kind === 'stall' ? `M${at - 6} 1 L${at + 6} 1 L${at} 12 Z` : `M${at - 5} 19 L${at + 5} 29 M${at + 5} 19 L${at - 5} 29`;
      add(plot, 'path', mark.kind === 'stall' ? { class: 'stall', d, fill: '#f79009' } : { class: 'lost', d, stroke: '#b42318', 'stroke-width': 2.5 }, mark.title);
    }
  }
}

function add(parent, name, attributes = {}, title) {
  const element = document.createElementNS(SVG, name);
  for (const [attribute, value] of Object.entries(attributes)) element.setAttribute(attribute, String(value));
  if (title) element.appendChild(document.createElementNS(SVG, 'title')).textContent = title;
  return parent.appendChild(element);
}
