import { Controller, Get, Header } from '@nestjs/common';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * sample/public. From the sources (tests run them) it is beside this file; `npm run sample` runs
 * dist/sample/, which tsc fills with JavaScript only, so from there it is the sources' folder.
 */
function publicFolder(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const candidates = [join(here, 'public'), join(here, '..', '..', 'sample', 'public')];
  return candidates.find((folder) => existsSync(join(folder, 'index.html'))) ?? candidates[0];
}

/** The lock timeline at GET / (sample/public: static HTML and plain JavaScript, no build). */
@Controller()
export class PageController {
  private readonly folder = publicFolder();

  @Get()
  @Header('content-type', 'text/html; charset=utf-8')
  index(): Promise<string> {
    return this.read('index.html');
  }

  // Named one by one, not `:file`: a parameter at the root would take /jobs and /schedulers too.
  /** The page's wiring: the event stream, the log, the renew-interval control. */
  @Get('control.js')
  @Header('content-type', 'text/javascript; charset=utf-8')
  control(): Promise<string> {
    return this.read('control.js');
  }

  /** The timeline's model and its SVG drawing. */
  @Get('timeline.js')
  @Header('content-type', 'text/javascript; charset=utf-8')
  timeline(): Promise<string> {
    return this.read('timeline.js');
  }

  private read(file: string): Promise<string> {
    return readFile(join(this.folder, file), 'utf8');
  }
}
