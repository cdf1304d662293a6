/** Types of redis-process.js: a private redis-server for tests, on a free port in a temp dir. */
export interface RedisProcess {
  port: number;
  url: string;
  pid(): number;
  /** Stops the server and removes its dir. */
  stop(): Promise<void>;
  /** Stops and starts it again on the same port and dir (AOF or RDB content survives). */
  restart(opts?: { downMs?: number; signal?: NodeJS.Signals }): Promise<void>;
}

/** A free TCP port on 127.0.0.1. */
export function freePort(): Promise<number>;

/** A free port for a Redis Cluster node, its bus port (port + 10000) free too, clear of `taken`. */
export function freeClusterPort(taken?: number[]): Promise<number>;

/** Starts a redis-server; `args` are extra command-line options (e.g. `['--maxmemory', '2mb']`). */
export function startRedis(opts?: { port?: number; args?: string[] }): Promise<RedisProcess>;
