/** Metadata keys and defaults of the Nest integration, in one place. */

/** Class metadata set by @Processor. */
export const PROCESSOR_METADATA = 'echomq:processor';
/** Method metadata set by @Process: the job names the method handles. */
export const PROCESS_METADATA = 'echomq:process';
/** Method metadata set by @OnWorkerEvent: the worker events the method listens to. */
export const WORKER_EVENT_METADATA = 'echomq:worker-event';

/** The configuration used when no configKey is given. */
export const DEFAULT_CONFIG_KEY = 'default';
