/** Every error text of the Nest integration, as small functions. */

export const MISSING_CONFIG = (configKey: string, user: string) =>
  `EchoMQ: ${user} uses the configuration "${configKey}", but no EchoMQModule.forRoot(${configKey === 'default' ? '' : `"${configKey}", `}...) or forRootAsync({ configKey: "${configKey}" }) registered it`;

export const NO_HANDLER = (jobName: string, processor: string, queue: string, known: string[]) =>
  `EchoMQ: job name "${jobName}" has no handler in processor ${processor} (queue "${queue}"); ` +
  (known.length > 0 ? `it handles ${known.map((n) => `"${n}"`).join(', ')}` : 'it has no named handler') +
  ' and no default @Process()';

export const DUPLICATE_HANDLER = (processor: string, jobName: string | undefined, first: string, second: string) =>
  `EchoMQ: processor ${processor} has two ${jobName === undefined ? 'default @Process()' : `@Process("${jobName}")`} handlers: ${first} and ${second}; keep one`;

export const NO_HANDLERS = (processor: string) =>
  `EchoMQ: processor ${processor} has no @Process() method, so it would fail every job`;

export const DUPLICATE_PROCESSOR = (queue: string, first: string, second: string) =>
  `EchoMQ: queue "${queue}" has two processors, ${first} and ${second}; a job could reach the one without its handler: put the handlers in one class`;

export const QUEUE_NAME_REQUIRED = (where: string) =>
  `EchoMQ: ${where} needs a queue name (a non-empty string), so that its token getQueueToken(name) is known before the factory runs`;

export const QUEUE_CONFIG_CONFLICT = (queue: string, first: string, second: string) =>
  `EchoMQ: queue "${queue}" is registered with the configuration "${first}" and with "${second}"; one queue name has one configuration`;

export const ASYNC_OPTIONS_REQUIRED = (where: string) =>
  `EchoMQ: ${where} needs one of useFactory, useClass or useExisting`;

export const NOT_INITIALIZED = () =>
  'EchoMQ: startWorkers() was called before the application initialized (call it after app.init() or app.listen())';

export const WORKERS_CLOSED = () =>
  'EchoMQ: the workers were closed with the application; they cannot be started again';

export const INVALID_PROCESSOR_OPTIONS = (processor: string, detail: string) =>
  `EchoMQ: processor ${processor}: ${detail}`;

export const PROCESSOR_PARTITIONS_MISMATCH = (processor: string, queue: string, given: number, registered: number) =>
  `processor ${processor} gives ${given} for queue "${queue}", which is registered with ${registered}; ` +
  'a worker with another count would miss partitions or read ones no job goes to: give the same count, or leave it out to take the queue\'s';

export const QUEUE_PARTITIONS_CONFLICT = (queue: string, first: number, second: number) =>
  `queue "${queue}" is registered with ${first} and with ${second}; every registration of one queue gives the same count`;
