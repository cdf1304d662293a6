/** Metadata keys and defaults of the Nest integration, in one place. */

/** Class metadata set by @Processor. */
export const PROCESSOR_METADATA = 'echomq:processor';
/** Method metadata set by @Process: the job names the method handles. */
export const PROCESS_METADATA = 'echomq:process';
/** Method metadata set by @OnWorkerEvent: the worker events the method listens to. */
export const WORKER_EVENT_METADATA = 'echomq:worker-event';
/** Method metadata set by @JobScheduler: the job schedulers whose jobs the method runs. */
export const JOB_SCHEDULER_METADATA = 'echomq:job-scheduler';

/** Class metadata set by @QueueEventsListener: the queue and the QueueEvents options. */
export const QUEUE_EVENTS_LISTENER_METADATA = 'echomq:queue-events-listener';
/** Method metadata set by @OnQueueEvent: the queue events the method listens to. */
export const QUEUE_EVENT_METADATA = 'echomq:queue-event';

/** The configuration used when no configKey is given. */
export const DEFAULT_CONFIG_KEY = 'default';

/** The name of a flow producer registered without one (registerFlowProducer(), @InjectFlowProducer()). */
export const DEFAULT_FLOW_PRODUCER = 'default';
