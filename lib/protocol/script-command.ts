import { Command } from 'ioredis';

/** A script argument; a Buffer goes byte for byte (data read as bytes, sent back to be compared). */
export type ScriptArg = string | number | Buffer;

/** The options of a connection, a Cluster or a pipeline that change how ioredis builds a command. */
export interface CommandOptions {
  keyPrefix?: string | undefined;
  showFriendlyErrorStack?: boolean | undefined;
  enableAutoPipelining?: boolean | undefined;
}

/** What a script call goes to: a connection, a Cluster or a pipeline (ioredis names all three so). */
export interface ScriptSink {
  readonly options: CommandOptions;
  sendCommand(command: Command): unknown;
  evalsha(...args: Array<string | number | Buffer>): unknown;
}

/**
 * Sends EVALSHA to `sink`: as the Command evalshaCommand builds, or through `evalsha(...)` where
 * the connection's options ask for ioredis's own way. Answers what the sink answers: a connection
 * the reply's promise, a pipeline itself.
 */
export function sendEvalsha(sink: ScriptSink, sha: string, keys: string[], args: ScriptArg[]): unknown {
  const command = evalshaCommand(sink.options, sha, keys, args);
  return command ? sink.sendCommand(command) : sink.evalsha(sha, keys.length, ...keys, ...args);
}

/**
 * An EVALSHA call as one ioredis Command with its arguments set in place; undefined when the
 * connection asks for what only ioredis's command methods do (a keyPrefix, friendly error
 * stacks, auto-pipelining), sent then through `evalsha(...)` (sendEvalsha).
 *
 * Why: a command method builds `new Command(name, args)`, and the constructor copies the
 * arguments with `Array.prototype.flat()`, about 90 ns an argument on Node 20: some 20 µs for a
 * finishJobs-13 call of 25 jobs (246 arguments), 1 µs a job of a worker whose whole CPU is about
 * 11 µs a job at concurrency 50 (bench/README.md, "Script calls without the copy"). A script
 * call's arguments are flat already, so the Command is made without any and given them;
 * `stringifyArguments` then does the rest of what the constructor does with them (numbers to
 * strings, Buffers noted so that they go byte for byte).
 */
export function evalshaCommand(options: CommandOptions, sha: string, keys: string[], args: ScriptArg[]): Command | undefined {
  if (options.keyPrefix || options.showFriendlyErrorStack || options.enableAutoPipelining) return undefined;
  const command = new Command('evalsha', [], { replyEncoding: 'utf8' });
  command.args = [sha, keys.length, ...keys, ...args];
  command.stringifyArguments();
  return command;
}
