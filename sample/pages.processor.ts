import { Process, Processor, type Job } from '../lib/index.js';

/** The queue of the pages a report flow renders (POST /reports): children of an `assemble` job in the reports queue. */
export const PAGES_QUEUE = 'pages';

/** What a `page` job takes. */
export interface PageData {
  page: number;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Renders one page of a report flow (~200 ms of "work"); its parent reads what it returns. */
@Processor({ name: PAGES_QUEUE, concurrency: 4 })
export class PagesProcessor {
  @Process('page')
  async page(job: Job<PageData>): Promise<{ page: number; words: number }> {
    await sleep(200);
    return { page: job.data.page, words: 300 + ((job.data.page * 37) % 200) };
  }
}
