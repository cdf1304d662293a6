import { Global, Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { LockManager } from '../runtime/locks/lock-manager.js';
import { ConfigRegistry } from './config.registry.js';
import { EchoMQExplorer } from './echomq.explorer.js';
import { EchoMQMetadataAccessor } from './echomq-metadata.accessor.js';
import { ProcessorDispatcher } from './processor.dispatcher.js';
import { QueueRegistry } from './queue.registry.js';
import { WorkerOrchestrator } from './worker.orchestrator.js';

/**
 * The app-wide machinery, once however many forRoot / registerQueue calls import it: the one
 * LockManager, the registries, the explorer and the worker orchestrator.
 */
@Global()
@Module({
  imports: [DiscoveryModule],
  providers: [
    { provide: LockManager, useFactory: () => new LockManager() },
    ConfigRegistry, QueueRegistry, EchoMQMetadataAccessor, EchoMQExplorer, ProcessorDispatcher, WorkerOrchestrator,
  ],
  exports: [LockManager, QueueRegistry, WorkerOrchestrator],
})
export class EchoMQCoreModule {}
