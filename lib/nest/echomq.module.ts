import { Module, type DynamicModule, type Provider } from '@nestjs/common';
import type { Queue } from '../runtime/queue/queue.js';
import { DEFAULT_CONFIG_KEY } from './echomq.constants.js';
import { EchoMQCoreModule } from './echomq-core.module.js';
import type {
  EchoMQModuleAsyncOptions, EchoMQOptionsFactory, EchoMQQueueOptionsFactory, EchoMQRootOptions,
  QueueSettings, RegisterQueueAsyncOptions, RegisterQueueOptions,
} from './echomq.interfaces.js';
import { QUEUE_NAME_REQUIRED } from './echomq.messages.js';
import { getConfigToken, getQueueToken } from './echomq.tokens.js';
import { asyncOptionsProviders } from './async-options.providers.js';
import { QueueRegistry } from './queue.registry.js';

let registrations = 0;

/**
 * EchoMQModule: `forRoot` / `forRootAsync` declare a configuration (one Redis, default `default`),
 * `registerQueue` / `registerQueueAsync` make queues injectable with @InjectQueue(name).
 * Every @Processor provider of the app gets a Worker, started after init and drained on close.
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

  /** Makes queues injectable: names, or `{ name, configKey, defaultJobOptions, ... }`. One Queue per name app-wide. */
  static registerQueue(...queues: Array<string | RegisterQueueOptions>): DynamicModule {
    const providers: Provider[] = queues.map((entry) => {
      const { name, configKey, ...settings } = typeof entry === 'string' ? { name: entry } : entry;
      assertName(name, 'EchoMQModule.registerQueue');
      return {
        provide: getQueueToken(name),
        useFactory: (registry: QueueRegistry): Queue => registry.register(name, configKey, settings),
        inject: [QueueRegistry],
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
        useFactory: (registry: QueueRegistry, settings: QueueSettings): Queue => registry.register(async.name, async.configKey, settings ?? {}),
        inject: [QueueRegistry, settingsToken],
      });
      exported.push(getQueueToken(async.name));
    }
    const imports = [EchoMQCoreModule, ...queues.flatMap((q) => q.imports ?? [])];
    return { module: EchoMQModule, imports, providers, exports: exported };
  }
}

function assertName(name: unknown, where: string): asserts name is string {
  if (typeof name !== 'string' || name.length === 0) throw new Error(QUEUE_NAME_REQUIRED(where));
}
