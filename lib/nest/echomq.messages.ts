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

export const SANDBOX_WITH_HANDLERS = (processor: string, methods: string[]) =>
  `EchoMQ: processor ${processor} names a sandbox file, which runs every job of its queue, so its @Process methods (${methods.join(', ')}) would never run; ` +
  'remove them (@OnWorkerEvent methods still run in the app), and declare its schedules in registerQueue({ schedulers })';

export const SANDBOX_WITH_SCOPE = (processor: string, scope: string) =>
  `EchoMQ: processor ${processor} names a sandbox file and scope ${scope}: its jobs run in the file, in a sandbox, never in an instance of the class, ` +
  'so a scope (a fresh instance for each job) would make none; remove scope (its @OnWorkerEvent methods run on its one instance)';

export const SCHEDULER_ON_SANDBOXED = (processor: string, method: string, id: unknown) =>
  `EchoMQ: @JobScheduler(${JSON.stringify(id)}) is on ${processor}.${method}, but ${processor} names a sandbox file, which runs every job of its queue, ` +
  'so no method of the class runs a job; declare the schedule in registerQueue({ schedulers }) (or with queue.upsertJobScheduler)';

export const DUPLICATE_PROCESSOR = (queue: string, first: string, second: string) =>
  `EchoMQ: queue "${queue}" has two processors, ${first} and ${second}; a job could reach the one without its handler: put the handlers in one class`;

export const QUEUE_NAME_REQUIRED = (where: string) =>
  `EchoMQ: ${where} needs a queue name (a non-empty string), so that its token getQueueToken(name) is known before the factory runs`;

export const QUEUE_CONFIG_CONFLICT = (queue: string, first: string, second: string) =>
  `EchoMQ: queue "${queue}" is registered with the configuration "${first}" and with "${second}"; one queue name has one configuration`;

export const FLOW_PRODUCER_NAME_INVALID = (where: string) =>
  `EchoMQ: ${where} takes a flow producer name that is a non-empty string, or none (then it is "default")`;

export const FLOW_PRODUCER_CONFIG_CONFLICT = (name: string, first: string, second: string) =>
  `EchoMQ: flow producer "${name}" is registered with the configuration "${first}" and with "${second}"; one name has one configuration`;

export const FLOW_PRODUCER_CONNECTION = (name: string) =>
  `EchoMQ: flow producer "${name}" is given a connection; it uses its configuration's (forRoot): for another Redis, declare another configuration and give its configKey`;

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

export const QUEUE_TELEMETRY_CONFLICT = (queue: string, first: string, second: string) =>
  `queue "${queue}" is registered with ${first} and with ${second}; the queue would take whichever module registered it first: ` +
  'registrations of one queue that give a telemetry give the same (one instance, or null); one that gives none takes what the queue has';

export const SCHEDULER_NOT_ON_HANDLER = (processor: string, method: string, id: unknown) =>
  `EchoMQ: @JobScheduler(${JSON.stringify(id)}) is on ${processor}.${method}, which has no @Process, so no job of it would run there; ` +
  'put it on the @Process method that runs its jobs';

export const SCHEDULER_OUTSIDE_PROCESSOR = (className: string, method: string, id: unknown) =>
  `EchoMQ: @JobScheduler(${JSON.stringify(id)}) is on ${className}.${method}, and ${className} is no @Processor, so the schedule would never be made; ` +
  'put it on a @Process method of the processor of its queue';

export const SCHEDULER_NAME_AMBIGUOUS = (processor: string, method: string, names: string[]) =>
  `${processor}.${method} handles several job names (${names.map((n) => `"${n}"`).join(', ')}): give template.name to say which the scheduler's jobs take`;

export const SCHEDULER_NAME_ELSEWHERE = (processor: string, method: string, jobName: string, handler: string | undefined) =>
  `names its jobs "${jobName}", which ${handler === undefined ? `no @Process of ${processor} handles` : `${processor}.${handler} handles`}; ` +
  `a scheduler's jobs run on the method that declares it: give a name ${processor}.${method} handles, or leave template.name out`;

/** Where a declared scheduler comes from, added to the errors about it. */
export const SCHEDULER_CONTEXT = (id: unknown, queue: string, where: string) =>
  `job scheduler ${JSON.stringify(id)} of queue "${queue}", ${where}`;

export const DUPLICATE_SCHEDULER = (id: string, queue: string, first: string, second: string) =>
  `job scheduler "${id}" of queue "${queue}" is declared twice, ${first} and ${second}; one id names one schedule: keep one, or give the other its own id`;

export const SCHEDULERS_NOT_A_LIST = (queue: string) =>
  `of queue "${queue}" must be an array of { id, repeat, template? }`;

export const SCHEDULER_NOT_AN_OBJECT = (queue: string) =>
  `of queue "${queue}" must be an object { id, repeat, template? }`;

export const REMOVE_UNDECLARED_NOT_BOOLEAN = (queue: string) =>
  `of queue "${queue}" must be true or false`;

export const REMOVE_UNDECLARED_CONFLICT = (queue: string) =>
  `queue "${queue}" is registered with true and with false; the registrations of one queue agree, or leave it out in all but one`;

export const SCOPED_QUEUE_EVENTS_LISTENER = (listener: string) =>
  `EchoMQ: @QueueEventsListener class ${listener} is request- or transient-scoped (or depends on a provider that is): ` +
  'a queue event comes with no request and goes to one instance, so make it (and what it injects) a default-scoped provider';

export const QUEUE_EVENTS_LISTENER_PARTITIONS_MISMATCH = (listener: string, queue: string, given: number, registered: number) =>
  `@QueueEventsListener ${listener} reads queue "${queue}" with ${given} partitions, but the queue is registered with ${registered}`;
