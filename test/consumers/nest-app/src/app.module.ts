import { Module } from '@nestjs/common';
import { EchoMQModule } from '@echomq/nestjs';
import { TranscodeProcessor } from './transcode.processor.js';

@Module({
  imports: [
    EchoMQModule.forRoot({ connection: process.env.REDIS_URL, prefix: process.env.ECHOMQ_PREFIX }),
    EchoMQModule.registerQueue('audio'),
  ],
  providers: [TranscodeProcessor],
})
export class AppModule {}
