/** The Nest face: the module, the decorators, the orchestrator (manual start) and the option types. */
export * from './decorators/index.js';
export { DEFAULT_CONFIG_KEY } from './echomq.constants.js';
export type * from './echomq.interfaces.js';
export { EchoMQModule } from './echomq.module.js';
export { getConfigToken, getFlowProducerToken, getQueueToken } from './echomq.tokens.js';
export { WorkerOrchestrator } from './worker.orchestrator.js';
export { QueueEventsHost } from './queue-events.host.js';
export { WorkerHost } from './worker-host.js';
