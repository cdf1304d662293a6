import { Injectable, type Type } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import {
  JOB_SCHEDULER_METADATA, PROCESS_METADATA, PROCESSOR_METADATA, QUEUE_EVENT_METADATA, QUEUE_EVENTS_LISTENER_METADATA, WORKER_EVENT_METADATA,
} from './echomq.constants.js';
import type { JobSchedulerDeclaration, ProcessorOptions } from './echomq.interfaces.js';
import type { WorkerEventName } from './decorators/on-worker-event.decorator.js';
import type { QueueEventsListenerMetadata, QueueEventsListenerName } from './decorators/queue-events-listener.decorator.js';

/** Reads the EchoMQ decorators' metadata, and nothing else. */
@Injectable()
export class EchoMQMetadataAccessor {
  constructor(private readonly reflector: Reflector) {}

  /** The @Processor options of a class, if it has any. */
  processorOptions(target: Type | Function): ProcessorOptions | undefined {
    return this.reflector.get(PROCESSOR_METADATA, target);
  }

  /** The job names a method handles; `undefined` in the list is the default handler. */
  jobNames(method: Function): Array<string | undefined> | undefined {
    return this.reflector.get(PROCESS_METADATA, method);
  }

  /** The job schedulers a method declares (@JobScheduler), as written. */
  jobSchedulers(method: Function): JobSchedulerDeclaration[] | undefined {
    return this.reflector.get(JOB_SCHEDULER_METADATA, method);
  }

  /** The worker events a method listens to. */
  workerEvents(method: Function): WorkerEventName[] | undefined {
    return this.reflector.get(WORKER_EVENT_METADATA, method);
  }

  /** The @QueueEventsListener queue and options of a class, if it has any. */
  queueEventsListener(target: Type | Function): QueueEventsListenerMetadata | undefined {
    return this.reflector.get(QUEUE_EVENTS_LISTENER_METADATA, target);
  }

  /** The queue events a method listens to (@OnQueueEvent). */
  queueEvents(method: Function): QueueEventsListenerName[] | undefined {
    return this.reflector.get(QUEUE_EVENT_METADATA, method);
  }
}
