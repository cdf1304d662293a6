/** Types of redis-cluster-replicated.js: a private three-master, three-replica Redis Cluster. */
import type { Redis } from 'ioredis';

export interface ReplicatedCluster {
  ports: number[];
  nodes: Array<{ host: string; port: number }>;
  /** cluster-node-timeout: no replica is promoted sooner after its master dies. */
  nodeTimeoutMs: number;
  admin(port: number): Redis;
  masterOf(slot: number): Promise<number>;
  nodeId(port: number): Promise<string>;
  kill(port: number): Promise<void>;
  signal(port: number, sig: 'SIGSTOP' | 'SIGCONT'): void;
  replicaOf(masterPort: number): Promise<number>;
  waitForFailover(slot: number, deadPort: number, timeoutMs?: number): Promise<{ port: number; ms: number }>;
  alive(): number[];
  stop(): Promise<void>;
}

/** Why a cluster cannot be started here, or '' when it can. */
export function clusterUnsupported(): string;

export function startReplicatedCluster(opts?: { masters?: number }): Promise<ReplicatedCluster>;
