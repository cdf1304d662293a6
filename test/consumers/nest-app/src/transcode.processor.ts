import { Process, Processor, type Job } from '@echomq/nestjs';

/** The audio queue's processor: every `transcode` job of it runs here. */
@Processor('audio')
export class TranscodeProcessor {
  @Process('transcode')
  async transcode(job: Job<{ file: string }>): Promise<{ file: string; format: string }> {
    await job.updateProgress(50);
    return { file: job.data.file.replace(/\.wav$/, '.mp3'), format: 'mp3' };
  }
}
