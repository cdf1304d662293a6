import { Module, type DynamicModule, type Provider } from '@nestjs/common';
import type { FlowProducer } from '../runtime/flows/flow-producer.js';
import type { Queue } from '../runtime/queue/queue.js';
import { DEFAULT_CONFIG_KEY, DEFAULT_FLOW_PRODUCER } from './echomq.constants.js';
import { EchoMQCoreModule } from './echomq-core.module.js';
import type {
  EchoMQFlowProducerOptionsFactory, EchoMQModuleAsyncOptions, EchoMQOptionsFactory, EchoMQQueueOptionsFactory, EchoMQRootOptions,
  FlowProducerSettings, QueueSettings, RegisterFlowProducerAsyncOptions, RegisterFlowProducerOptions, RegisterQueueAsyncOptions,
  RegisterQueueOptions,
} from './echomq.interfaces.js';
import { FLOW_PRODUCER_NAME_INVALID, QUEUE_NAME_REQUIRED } from './echomq.messages.js';
import { getConfigToken, getFlowProducerToken, getQueueToken } from './echomq.tokens.js';
import { asyncOptionsProviders } from './async-options.providers.js';
import { FlowProducerRegistry } from './flow-producer.registry.js';
import { QueueRegistry } from './queue.registry.js';
import { RegisteredSchedulers } from './registered-schedulers.js';

let registrations = 0;

/**
 * EchoMQModule: `forRoot` / `forRootAsync` declare a configuration (one Redis, default `default`),
 * `registerQueue` / `registerQueueAsync` make queues injectable with @InjectQueue(name) and may
 * declare their job schedulers; `registerFlowProducer` / `registerFlowProducerAsync` make
 * FlowProducers injectable with @InjectFlowProducer(name). Every @Processor provider of the app gets a Worker, started after
 * init (once the declared schedulers are in Redis) and drained on close.
 */
@Module({})
export class EchoMQModule {
  /** Declares a configuration: `forRoot(options)` (key `default`) or `forRoot(configKey, options)`. */
  static forRoot(options?: EchoMQRootOptions): DynamicModule;
  static forRoot(configKey: string, options?: EchoMQRootOptions): DynamicModule;
  static forRoot(keyOrOptions?: string | EchoMQRootOptions, maybeOptions?: EchoMQRootOptions): DynamicModule {
    const configKey = typeof keyOrOptions === 'string' ? keyOrOptions : DEFAULT_CONFIG_KEY;
    const options = (typeof keyOrOptions === 'string' ? maybeOptions : keyOrOptions) ?? {};
    const config: Provider = { provide: getConfigToken(configKey), useValue: options };
    return { module: EchoMQModule, global: true, imports: [EchoMQCoreModule], providers: [config], exports: [config] };
  }

  /** Declares a configuration built by a factory, a class (useClass) or an existing provider (useExisting). */
  static forRootAsync(async: EchoMQModuleAsyncOptions): DynamicModule {
    const token = getConfigToken(async.configKey ?? DEFAULT_CONFIG_KEY);
    const providers = asyncOptionsProviders<EchoMQRootOptions, EchoMQOptionsFactory>(
      token, async, (factory) => factory.createEchoMQOptions(), 'EchoMQModule.forRootAsync');
    return {
      module: EchoMQModule,
      global: true,
      imports: [EchoMQCoreModule, ...(async.imports ?? [])],
      providers,
      exports: [token],
    };
  }

  /**
   * Makes queues injectable: names, or `{ name, configKey, defaultJobOptions, ..., schedulers, removeUndeclaredSchedulers }`.
   * One Queue per name app-wide.
   */
  static registerQueue(...queues: Array<string | RegisterQueueOptions>): DynamicModule {
    const providers: Provider[] = queues.map((entry) => {
      const { name, configKey, ...settings } = typeof entry === 'string' ? { name: entry } : entry;
      assertName(name, 'EchoMQModule.registerQueue');
      return {
        provide: getQueueToken(name),
        useFactory: (registry: QueueRegistry, schedulers: RegisteredSchedulers): Queue =>
          register(registry, schedulers, name, configKey, settings, `registerQueue("${name}")`),
        inject: [QueueRegistry, RegisteredSchedulers],
      };
    });
    return { module: EchoMQModule, imports: [EchoMQCoreModule], providers, exports: providers };
  }

  /** Makes queues injectable whose settings come from a factory (ConfigService, ...). The name is given up front. */
  static registerQueueAsync(...queues: RegisterQueueAsyncOptions[]): DynamicModule {
    const providers: Provider[] = [];
    const exported: string[] = [];
    for (const async of queues) {
      assertName(async?.name, 'EchoMQModule.registerQueueAsync');
      const settingsToken = `EchoMQQueueSettings:${async.name}:${++registrations}`;
      providers.push(...asyncOptionsProviders<QueueSettings, EchoMQQueueOptionsFactory>(
        settingsToken, async, (factory) => factory.createQueueOptions(), `EchoMQModule.registerQueueAsync("${async.name}")`));
      providers.push({
        provide: getQueueToken(async.name),
        useFactory: (registry: QueueRegistry, schedulers: RegisteredSchedulers, settings: QueueSettings): Queue =>
          register(registry, schedulers, async.name, async.configKey, settings ?? {}, `registerQueueAsync("${async.name}")`),
        inject: [QueueRegistry, RegisteredSchedulers, settingsToken],
      });
      exported.push(getQueueToken(async.name));
    }
    const imports = [EchoMQCoreModule, ...queues.flatMap((q) => q.imports ?? [])];
    return { module: EchoMQModule, imports, providers, exports: exported };
  }

  /**
   * Makes flow producers injectable (@InjectFlowProducer(name)): `{ name?, configKey?, prefix?, maxEvents?, maxDataSize? }`,
   * on their configuration's connection. One FlowProducer per name app-wide, closed with the app.
   */
  static registerFlowProducer(...producers: RegisterFlowProducerOptions[]): DynamicModule {
    const providers: Provider[] = (producers.length > 0 ? producers : [{}]).map((entry) => {
      const { name = DEFAULT_FLOW_PRODUCER, configKey, ...settings } = entry ?? {};
      assertFlowProducerName(name, 'EchoMQModule.registerFlowProducer');
      return {
        provide: getFlowProducerToken(name),
        useFactory: (registry: FlowProducerRegistry): FlowProducer => registry.register(name, configKey, settings),
        inject: [FlowProducerRegistry],
      };
    });
    return { module: EchoMQModule, imports: [EchoMQCoreModule], providers, exports: providers };
  }

  /** Makes flow producers injectable whose settings come from a factory (ConfigService, ...). The name is given up front. */
  static registerFlowProducerAsync(...producers: RegisterFlowProducerAsyncOptions[]): DynamicModule {
    const providers: Provider[] = [];
    const exported: string[] = [];
    for (const async of producers) {
      const name = async?.name ?? DEFAULT_FLOW_PRODUCER;
      assertFlowProducerName(name, 'EchoMQModule.registerFlowProducerAsync');
      const settingsToken = `EchoMQFlowProducerSettings:${name}:${++registrations}`;
      providers.push(...asyncOptionsProviders<FlowProducerSettings, EchoMQFlowProducerOptionsFactory>(
        settingsToken, async, (factory) => factory.createFlowProducerOptions(), `EchoMQModule.registerFlowProducerAsync("${name}")`));
      providers.push({
        provide: getFlowProducerToken(name),
        useFactory: (registry: FlowProducerRegistry, settings: FlowProducerSettings): FlowProducer =>
          registry.register(name, async.configKey, settings ?? {}),
        inject: [FlowProducerRegistry, settingsToken],
      });
      exported.push(getFlowProducerToken(name));
    }
    const imports = [EchoMQCoreModule, ...producers.flatMap((p) => p?.imports ?? [])];
    return { module: EchoMQModule, imports, providers, exports: exported };
  }
}

/** Registers the queue; its scheduler settings are kept for the bootstrap, which checks and applies them. */
function register(
  registry: QueueRegistry, schedulers: RegisteredSchedulers, name: string, configKey: string | undefined, settings: QueueSettings, where: string,
): Queue {
  return registry.register(name, configKey, schedulers.take(name, configKey ?? DEFAULT_CONFIG_KEY, where, settings));
}

function assertName(name: unknown, where: string): asserts name is string {
  if (typeof name !== 'string' || name.length === 0) throw new Error(QUEUE_NAME_REQUIRED(where));
}

function assertFlowProducerName(name: unknown, where: string): asserts name is string {
  if (typeof name !== 'string' || name.length === 0) throw new Error(FLOW_PRODUCER_NAME_INVALID(where));
}
