import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { existsSync, mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { AppModule } from '../sample/app.module.js';
import { mountBoard } from '../sample/board.js';
import { onCluster, redisUrl, uniqueQueueName } from './support/redis.js';

/** Debian's Chromium (`apt-get install -y chromium`; .ci/run installs it), or CHROMIUM_PATH. */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/** Where the screenshots go (git ignores test-output/). */
const OUTPUT = join(process.cwd(), 'test-output', 'sample-browser');

// Without a browser the page goes untested: say so in the test's own name and on the console,
// and in CI (which installs Chromium) fail rather than skip.
const missing = existsSync(CHROMIUM) ? undefined : `no Chromium at ${CHROMIUM} (apt-get install -y chromium, or set CHROMIUM_PATH)`;
if (missing && !process.env.CI) console.warn(`test/sample-browser.test.ts SKIPPED: ${missing}`);
// Single-node only: the sample service takes a redis:// URL, which is one node.
const describeInBrowser = onCluster || (missing && !process.env.CI) ? describe.skip : describe;

describeInBrowser(`the sample's lock timeline in headless Chromium${missing ? ` (skipped: ${missing})` : ''}`, () => {
  let app: INestApplication;
  let base: string;
  let browser: Browser;
  let page: Page;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    if (missing) throw new Error(`CI runs this test in a browser, and there is ${missing}`);
    mkdirSync(OUTPUT, { recursive: true });
    app = await NestFactory.create(AppModule.register({ redisUrl: redisUrl(), prefix: uniqueQueueName('browser') }), { logger: false });
    mountBoard(app); // as main.ts does
    await app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`;
    // --no-sandbox: CI and these machines run as root, where Chromium's sandbox refuses to start.
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.on('pageerror', (error) => pageErrors.push(error.message));
    page.on('console', (message) => message.type() === 'error' && pageErrors.push(message.text()));
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await app?.close();
  });

  /** Sets the demo's control as a person would (the range input has no fill()), runs a demo job, and waits for its worker to close. */
  async function runDemo(renewMs: number, lockMs: number, workMs: number): Promise<{ jobId: string; outcome: string }> {
    await page.locator('#lockMs').fill(String(lockMs));
    await page.locator('#workMs').fill(String(workMs));
    // Runs in the page; the tests compile without the DOM's types, hence the shape spelled out.
    await page.locator('#renewMs').evaluate((input: { value: string; dispatchEvent(event: Event): boolean }, value) => {
      input.value = value;
      input.dispatchEvent(new Event('input', { bubbles: true }));
    }, String(renewMs));
    await expect(page.locator('#renewOut').textContent()).resolves.toBe(`${renewMs} ms`);
    await page.locator('#run').click();
    await page.locator('#outcome[data-state="finished"]').waitFor({ timeout: 30_000 });
    const outcome = (await page.locator('#outcome').textContent()) ?? '';
    const jobId = /Demo job #(\S+) /.exec(outcome)?.[1];
    if (!jobId) throw new Error(`the outcome names no job: ${outcome}`);
    return { jobId, outcome };
  }

  /** Counts the marks of one kind in a job's row, with the time axis paused so the drawing holds still. */
  async function marks(jobId: string): Promise<Record<string, number>> {
    const row = page.locator(`g.row[data-queue="lock-demo"][data-job="${jobId}"]`);
    await expect(row.count()).resolves.toBe(1);
    const counts: Record<string, number> = {};
    for (const kind of ['acquire', 'renew', 'held', 'lapse', 'stall', 'lost', 'release']) counts[kind] = await row.locator(`.${kind}`).count();
    counts.completed = await row.locator('.release[data-reason="completed"]').count();
    return counts;
  }

  async function paused<T>(look: () => Promise<T>, screenshot: string): Promise<T> {
    await page.locator('#pause').check();
    try {
      const seen = await look();
      await page.screenshot({ path: join(OUTPUT, screenshot), fullPage: true });
      return seen;
    } finally {
      await page.locator('#pause').uncheck();
    }
  }

  it('draws a renew interval under lockDuration as one ownership, renewed until the job completes', async () => {
    await page.goto(`${base}/`);
    await expect(page.locator('h1').textContent()).resolves.toBe('The lock timeline');
    await page.locator('#status', { hasText: 'live' }).waitFor({ timeout: 10_000 });
    const { jobId, outcome } = await runDemo(500, 1500, 2500);
    expect(outcome).toContain('acquired (attempt 1)');
    expect(outcome).toMatch(/renewed ×\d+, released \(completed\)/);
    expect(outcome).not.toContain('lapsed');
    const seen = await paused(() => marks(jobId), 'owned.png');
    expect(seen).toMatchObject({ acquire: 1, lapse: 0, stall: 0, lost: 0, release: 1, completed: 1 });
    expect(seen.renew).toBeGreaterThanOrEqual(3); // 2.5 s of work, a renewal every 0.5 s
    expect(pageErrors).toEqual([]);
  }, 60_000);

  it('draws a renew interval over lockDuration as lapses, stalls (back to wait, then failed) and lost locks', async () => {
    await expect(page.locator('#rule').textContent()).resolves.toMatch(/lockDuration/);
    const { jobId, outcome } = await runDemo(2000, 1000, 3000);
    // Each pickup: the lock lapses at 1 s, a sweep (every 250 ms) moves the job, the renewal at 2 s finds no lock.
    expect(outcome).toMatch(/acquired \(attempt 1\), stalled → wait, lost \(-2\), released \(lost\), acquired \(attempt 2\), stalled → failed, lost \(-2\), released \(lost\)/);
    expect(outcome).toContain('The lock lapsed 2×');
    const seen = await paused(() => marks(jobId), 'lapsed.png');
    expect(seen).toMatchObject({ acquire: 2, renew: 0, lapse: 2, stall: 2, lost: 2, release: 2, completed: 0 });
    await expect(page.locator('#rule').getAttribute('class')).resolves.toBe('unsafe');
    expect(pageErrors).toEqual([]);
  }, 60_000);

  it('opens bull-board beside it: the demo queue, and the lapsed job failed for stalling', async () => {
    await page.goto(`${base}/board`);
    await page.getByText('lock-demo').first().waitFor({ timeout: 20_000 });
    await page.goto(`${base}/board/queue/lock-demo?status=failed`);
    await page.getByText('job stalled more than allowable limit').first().waitFor({ timeout: 20_000 });
    await page.screenshot({ path: join(OUTPUT, 'board.png'), fullPage: true });
  }, 60_000);
});
