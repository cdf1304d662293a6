import { Injectable } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import type { RedisClient } from '../protocol/script.js';
import { closeClient, connect } from '../runtime/core/connection.js';
import type { EchoMQRootOptions } from './echomq.interfaces.js';
import { MISSING_CONFIG } from './echomq.messages.js';
import { getConfigToken } from './echomq.tokens.js';

/** A root configuration, resolved, with the one connection its queues and workers share. */
export interface ResolvedConfig {
  configKey: string;
  options: EchoMQRootOptions;
  client: RedisClient;
}

/**
 * Finds root configurations by key (each forRoot provides its own token) and opens one shared
 * connection per configuration, the first time it is needed. Closes the ones it opened.
 */
@Injectable()
export class ConfigRegistry {
  private readonly resolved = new Map<string, ResolvedConfig & { owned: boolean }>();

  constructor(private readonly moduleRef: ModuleRef) {}

  /** The configuration `configKey`; `user` names who asks, for the error when it is missing. */
  get(configKey: string, user: string): ResolvedConfig {
    const known = this.resolved.get(configKey);
    if (known) return known;
    let options: EchoMQRootOptions | undefined;
    try {
      options = this.moduleRef.get<EchoMQRootOptions>(getConfigToken(configKey), { strict: false });
    } catch {
      options = undefined;
    }
    if (!options) throw new Error(MISSING_CONFIG(configKey, user));
    const { client, owned } = connect(options.connection);
    const config = { configKey, options, client, owned };
    this.resolved.set(configKey, config);
    return config;
  }

  /** Closes the connections this registry opened (an instance given by the user stays open). */
  async close(): Promise<void> {
    const configs = [...this.resolved.values()];
    this.resolved.clear();
    await Promise.all(configs.filter((c) => c.owned).map((c) => closeClient(c.client)));
  }
}
