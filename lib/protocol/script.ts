import { createHash } from 'node:crypto';
import type { ChainableCommander, Cluster, Redis } from 'ioredis';
import { loadLuaSource } from './lua-source.js';
import { sendEvalsha, type ScriptArg, type ScriptSink } from './script-command.js';

/** Either connection kind: every script call works the same on one Redis and on a Cluster. */
export type RedisClient = Redis | Cluster;


/**
 * One Lua script: read and hashed once, called by EVALSHA. When Redis answers NOSCRIPT (it was
 * restarted, or SCRIPT FLUSH ran) the same call is sent again as EVAL, which also caches the
 * script, so the caller never sees the miss. The KEYS count is checked against the file name
 * (`<name>-<KEYS>.lua`) on every call, so a binding that builds the wrong KEYS fails loudly.
 */
export class Script {
  readonly fileName: string;
  private source?: string;
  private digest?: string;

  constructor(readonly name: string, readonly numberOfKeys: number) {
    this.fileName = `${name}-${numberOfKeys}.lua`;
  }

  get lua(): string {
    return (this.source ??= loadLuaSource(this.fileName));
  }

  get sha(): string {
    return (this.digest ??= createHash('sha1').update(this.lua).digest('hex'));
  }

  /** Runs the script; a NOSCRIPT answer is resent as EVAL. */
  async run(client: RedisClient, keys: string[], args: ScriptArg[]): Promise<unknown> {
    this.checkKeys(keys);
    try {
      return await (sendEvalsha(client, this.sha, keys, args) as Promise<unknown>);
    } catch (error) {
      if (!isNoScript(error)) throw error;
      return client.eval(this.lua, keys.length, ...keys, ...args);
    }
  }

  /** Queues the call on a pipeline; `runPipelined` resends any NOSCRIPT entries. */
  queue(pipeline: ChainableCommander, keys: string[], args: ScriptArg[]): void {
    this.checkKeys(keys);
    // A Pipeline takes a built Command and has its client's options; ChainableCommander's type names neither.
    sendEvalsha(pipeline as unknown as ScriptSink, this.sha, keys, args);
  }

  private checkKeys(keys: string[]): void {
    if (keys.length !== this.numberOfKeys) {
      throw new Error(`EchoMQ: ${this.fileName} takes ${this.numberOfKeys} KEYS, the binding built ${keys.length}`);
    }
  }
}

export function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}

/** One queued script call of a pipeline. */
export interface ScriptCall {
  script: Script;
  keys: string[];
  args: ScriptArg[];
}

/**
 * Runs many script calls in one round trip. A call that failed with NOSCRIPT did not run, so it is
 * resent on its own (as EVAL); other errors are returned in place, in call order. `extra` queues
 * plain commands after the calls, in the same round trip (a worker's heartbeat carries its registry
 * entry and the read of the queue's limits that way); their replies follow the calls' replies.
 */
export async function runPipelined(
  client: RedisClient, calls: ScriptCall[], extra?: (pipeline: ChainableCommander) => void,
): Promise<Array<[Error | null, unknown]>> {
  if (calls.length === 0 && !extra) return [];
  const pipeline = client.pipeline();
  for (const call of calls) call.script.queue(pipeline, call.keys, call.args);
  extra?.(pipeline);
  const replies = ((await pipeline.exec()) ?? []) as Array<[Error | null, unknown]>;
  for (let i = 0; i < calls.length && i < replies.length; i++) {
    if (isNoScript(replies[i][0])) {
      const call = calls[i];
      try {
        replies[i] = [null, await call.script.run(client, call.keys, call.args)];
      } catch (error) {
        replies[i] = [error as Error, null];
      }
    }
  }
  return replies;
}
