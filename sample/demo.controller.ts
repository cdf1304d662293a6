import { BadRequestException, Body, ConflictException, Controller, Get, HttpCode, Post } from '@nestjs/common';
import { LockDemo, LockDemoBusyError, type LockDemoRun, type LockDemoSettings } from './lock-demo.js';

/** What each field of POST /locks/demo accepts, ms, and what it is when left out. */
const FIELDS: Record<keyof LockDemoSettings, { min: number; max: number; fallback: number }> = {
  renewMs: { min: 100, max: 60_000, fallback: 1_000 },
  lockMs: { min: 500, max: 30_000, fallback: 2_000 },
  workMs: { min: 100, max: 60_000, fallback: 5_000 },
};

/**
 * The lock timeline's control (the page at /): POST /locks/demo `{ renewMs, lockMs, workMs }`
 * starts one demo job on a worker with that renew interval and lockDuration (409 while one runs);
 * GET /locks/demo answers the running one, or null. Its lock events come on GET /locks/events.
 */
@Controller('locks/demo')
export class DemoController {
  constructor(private readonly demo: LockDemo) {}

  @Post()
  @HttpCode(202)
  async start(@Body() body?: Partial<Record<keyof LockDemoSettings, unknown>>): Promise<LockDemoRun> {
    const settings = parseSettings(body ?? {});
    try {
      return await this.demo.start(settings);
    } catch (error) {
      if (error instanceof LockDemoBusyError) throw new ConflictException(error.message);
      throw error;
    }
  }

  @Get()
  current(): { running: LockDemoRun | null } {
    return { running: this.demo.current ?? null };
  }
}

/** Each field a whole number of ms within its bounds, or its default; a 400 names the first that is not. */
function parseSettings(body: Partial<Record<keyof LockDemoSettings, unknown>>): LockDemoSettings {
  const settings = {} as LockDemoSettings;
  for (const [field, { min, max, fallback }] of Object.entries(FIELDS) as Array<[keyof LockDemoSettings, (typeof FIELDS)[keyof LockDemoSettings]]>) {
    const value = body[field] ?? fallback;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
      throw new BadRequestException(`${field} must be a whole number of ms from ${min} to ${max}, got ${JSON.stringify(value)}`);
    }
    settings[field] = value;
  }
  return settings;
}
