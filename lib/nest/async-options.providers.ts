import type { InjectionToken, Provider, Type } from '@nestjs/common';
import { ASYNC_OPTIONS_REQUIRED } from './echomq.messages.js';

/** The async shape both forRootAsync and registerQueueAsync take. */
interface AsyncSource<Options, Factory> {
  useFactory?: (...args: any[]) => Options | Promise<Options>;
  inject?: Array<InjectionToken | { token: InjectionToken; optional: boolean }>;
  useClass?: Type<Factory>;
  useExisting?: InjectionToken;
  extraProviders?: Provider[];
}

/**
 * The providers that put the options under `token`: the factory itself, or a factory that calls
 * the useClass / useExisting instance's method (so that method is always called), plus extraProviders.
 */
export function asyncOptionsProviders<Options, Factory>(
  token: string,
  source: AsyncSource<Options, Factory>,
  build: (factory: Factory) => Options | Promise<Options>,
  where: string,
): Provider[] {
  const extra = source.extraProviders ?? [];
  if (source.useFactory) return [...extra, { provide: token, useFactory: source.useFactory, inject: source.inject ?? [] }];
  const factoryToken = source.useClass ?? source.useExisting;
  if (!factoryToken) throw new Error(ASYNC_OPTIONS_REQUIRED(where));
  const fromFactory: Provider = { provide: token, useFactory: (factory: Factory) => build(factory), inject: [factoryToken] };
  return source.useClass ? [...extra, source.useClass, fromFactory] : [...extra, fromFactory];
}
