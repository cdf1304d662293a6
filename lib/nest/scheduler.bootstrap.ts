import { Injectable, Logger } from '@nestjs/common';
import { EchoMQOptionError } from '../protocol/errors.js';
import { describe } from '../protocol/names.js';
import { assertSchedulerId } from '../protocol/scheduler-ids.js';
import { Queue } from '../runtime/queue/queue.js';
import { parseRepeatOptions } from '../runtime/schedulers/repeat-options.js';
import { storedScheduler } from '../runtime/schedulers/template.js';
import { ConfigRegistry } from './config.registry.js';
import { EchoMQExplorer, type ProcessorDefinition } from './echomq.explorer.js';
import type { JobSchedulerDeclaration } from './echomq.interfaces.js';
import {
  DUPLICATE_SCHEDULER, REMOVE_UNDECLARED_CONFLICT, REMOVE_UNDECLARED_NOT_BOOLEAN, SCHEDULER_CONTEXT, SCHEDULER_NOT_AN_OBJECT,
  SCHEDULERS_NOT_A_LIST,
} from './echomq.messages.js';
import { QueueRegistry } from './queue.registry.js';
import { RegisteredSchedulers, type SchedulerRegistration } from './registered-schedulers.js';

/** One declaration, with where it was made: for errors, and the prefix of the fields they name. */
interface Declared {
  declaration: JobSchedulerDeclaration;
  /** `declared by @JobScheduler on ReportsProcessor.digest`, `in registerQueue("reports").schedulers[0]`. */
  where: string;
  /** `schedulers[0].` for a registration's, none for a decorator's. */
  fieldPrefix: string;
}

/** One queue (a name on a configuration), what the code declares for it, and whether the rest goes. */
interface Target {
  queueName: string;
  queue: Queue;
  /** A Queue made here for a processor's queue that no module registered: closed once done. */
  temporary: boolean;
  declared: Map<unknown, Declared>;
  removeUndeclared?: boolean;
}

/**
 * The job schedulers declared in code (@JobScheduler, registerQueue's `schedulers`), put in Redis
 * once at bootstrap, by the WorkerOrchestrator before it starts any worker. Every declaration is
 * checked before the first is written, so a bad one refuses the bootstrap with nothing written.
 * Shutdown never removes one: a schedule belongs to the queue, not to the app instance that
 * declared it. Nothing is sent to Redis when nothing is declared.
 */
@Injectable()
export class SchedulerBootstrap {
  private readonly logger = new Logger('EchoMQ');

  constructor(
    private readonly explorer: EchoMQExplorer,
    private readonly registered: RegisteredSchedulers,
    private readonly queues: QueueRegistry,
    private readonly configs: ConfigRegistry,
  ) {}

  /** Upserts every declared scheduler, then removes the undeclared ones of the queues that ask for it. */
  async apply(): Promise<void> {
    const targets = new Map<string, Target>();
    try {
      for (const registration of this.registered.registrations) this.addRegistration(targets, registration);
      for (const definition of this.explorer.definitions) this.addDecorated(targets, definition);
      for (const target of targets.values()) {
        for (const declared of target.declared.values()) check(declared, target);
      }
      for (const target of targets.values()) await this.write(target);
    } finally {
      await Promise.all([...targets.values()].filter((target) => target.temporary).map((target) => target.queue.close()));
    }
  }

  private async write(target: Target): Promise<void> {
    const { queue, declared } = target;
    for (const { declaration: { id, repeat, template } } of declared.values()) await queue.upsertJobScheduler(id, repeat, template);
    if (!target.removeUndeclared) return;
    for (const { key } of await queue.getJobSchedulers()) {
      if (declared.has(key)) continue;
      await queue.removeJobScheduler(key);
      this.logger.log(`job scheduler "${key}" of queue "${queue.name}" removed: nothing declares it (removeUndeclaredSchedulers)`);
    }
  }

  private addRegistration(targets: Map<string, Target>, registration: SchedulerRegistration): void {
    const { queueName, configKey, where, schedulers, removeUndeclaredSchedulers: remove } = registration;
    const target = this.target(targets, queueName, configKey, () => {
      throw new Error(`EchoMQ: queue "${queueName}" declares schedulers in ${where} but was not registered`); // the registration's factory registers it
    });
    if (remove !== undefined) {
      if (typeof remove !== 'boolean') {
        throw new EchoMQOptionError('removeUndeclaredSchedulers', `${REMOVE_UNDECLARED_NOT_BOOLEAN(queueName)}, got ${describe(remove)} (in ${where})`);
      }
      if (target.removeUndeclared !== undefined && target.removeUndeclared !== remove) {
        throw new EchoMQOptionError('removeUndeclaredSchedulers', REMOVE_UNDECLARED_CONFLICT(queueName));
      }
      target.removeUndeclared = remove;
    }
    if (schedulers === undefined) return;
    if (!Array.isArray(schedulers)) throw new EchoMQOptionError('schedulers', `${SCHEDULERS_NOT_A_LIST(queueName)}, got ${describe(schedulers)} (in ${where})`);
    schedulers.forEach((entry: unknown, i) => {
      const fieldPrefix = `schedulers[${i}].`;
      if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
        throw new EchoMQOptionError(`schedulers[${i}]`, `${SCHEDULER_NOT_AN_OBJECT(queueName)}, got ${describe(entry)} (in ${where})`);
      }
      add(target, { declaration: entry as JobSchedulerDeclaration, where: `in ${where}.schedulers[${i}]`, fieldPrefix });
    });
  }

  private addDecorated(targets: Map<string, Target>, definition: ProcessorDefinition): void {
    if (definition.schedulers.length === 0) return;
    const { queueName, configKey, className } = definition;
    const target = this.target(targets, queueName, configKey, () => {
      // A queue no module registered on this configuration: one Queue for the upserts, as the processor's worker reads it.
      const { options, client } = this.configs.get(configKey, `processor ${className}`);
      return new Queue(queueName, { connection: client, prefix: options.prefix, partitions: definition.partitions, defaultJobOptions: options.defaultJobOptions });
    });
    for (const { method, ...declaration } of definition.schedulers) {
      add(target, { declaration, where: `declared by @JobScheduler on ${className}.${method}`, fieldPrefix: '' });
    }
  }

  /** The target of a queue name on a configuration: its registered Queue, else one `make` gives. */
  private target(targets: Map<string, Target>, queueName: string, configKey: string, make: () => Queue): Target {
    const key = JSON.stringify([configKey, queueName]);
    let target = targets.get(key);
    if (!target) {
      const registered = this.queues.registration(queueName);
      const shared = registered?.configKey === configKey ? registered.queue : undefined;
      target = { queueName, queue: shared ?? make(), temporary: shared === undefined, declared: new Map() };
      targets.set(key, target);
    }
    return target;
  }
}

/** One id, one schedule per queue: a second declaration would silently replace the first at every boot. */
function add(target: Target, declared: Declared): void {
  const { id } = declared.declaration;
  const first = target.declared.get(id);
  if (first) {
    throw new EchoMQOptionError(`${declared.fieldPrefix}id`, DUPLICATE_SCHEDULER(String(id), target.queueName, first.where, declared.where));
  }
  target.declared.set(id, declared);
}

/** upsertJobScheduler's own checks of its arguments, with the declaration's field path and where it was made. */
function check({ declaration, where, fieldPrefix }: Declared, { queue, queueName }: Target): void {
  const { id, repeat, template } = declaration;
  try {
    assertSchedulerId(id, 'id');
    const schedule = parseRepeatOptions(repeat);
    storedScheduler(id, schedule, template, queue.options.defaultJobOptions, queue.options.maxDataSize);
  } catch (error) {
    if (!(error instanceof EchoMQOptionError)) throw error;
    const detail = error.message.slice(error.field.length + 2); // without the "field: " the constructor put first
    throw new EchoMQOptionError(fieldPrefix + error.field, `${detail} (${SCHEDULER_CONTEXT(id, queueName, where)})`);
  }
}
