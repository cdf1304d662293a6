import { Global, Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { LockManager } from '../runtime/locks/lock-manager.js';
import { ConfigRegistry } from './config.registry.js';
import { EchoMQExplorer } from './echomq.explorer.js';
import { EchoMQMetadataAccessor } from './echomq-metadata.accessor.js';
import { FlowProducerRegistry } from './flow-producer.registry.js';
import { ProcessorDispatcher } from './processor.dispatcher.js';
import { QueueEventsExplorer } from './queue-events.explorer.js';
import { QueueEventsOrchestrator } from './queue-events.orchestrator.js';
import { QueueRegistry } from './queue.registry.js';
import { RegisteredSchedulers } from './registered-schedulers.js';
import { SchedulerBootstrap } from './scheduler.bootstrap.js';
import { WorkerOrchestrator } from './worker.orchestrator.js';

/**
 * The app-wide machinery, once however many forRoot / registerQueue calls import it: the one
 * LockManager, the registries (queues, flow producers, configurations), the explorers, the scheduler
 * bootstrap, the worker orchestrator and the queue events listeners' orchestrator.
 */
@Global()
@Module({
  imports: [DiscoveryModule],
  providers: [
    { provide: LockManager, useFactory: () => new LockManager() },
    ConfigRegistry, QueueRegistry, FlowProducerRegistry, EchoMQMetadataAccessor, EchoMQExplorer, ProcessorDispatcher, WorkerOrchestrator,
    RegisteredSchedulers, SchedulerBootstrap, QueueEventsExplorer, QueueEventsOrchestrator,
  ],
  exports: [LockManager, QueueRegistry, FlowProducerRegistry, RegisteredSchedulers, WorkerOrchestrator],
})
export class EchoMQCoreModule {}
