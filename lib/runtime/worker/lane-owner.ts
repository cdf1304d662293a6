import type { LockManager } from '../locks/lock-manager.js';
import type { ProcessorFunction } from '../queue/processor.js';
import type { SandboxPool } from '../sandbox/sandbox-pool.js';
import type { MetricsRecorder } from './metrics-recorder.js';
import type { PartitionFetcher } from './partition-fetcher.js';
import type { RunSlots } from './run-slots.js';
import { StallSpans } from './stall-spans.js';
import type { WorkerConnections } from './worker-connections.js';
import type { PlainEvent, WorkerEvents } from './worker-events.js';
import type { LaneOwner } from './worker-lane.js';
import type { WorkerLimits } from './worker-limits.js';
import type { ResolvedWorkerOptions } from './worker-options.js';

/** What a Worker gives its lanes; the parts made after the lanes (metrics, the partition fetcher, the loop) are read when used. */
export interface LaneOwnerParts {
  workerId: string;
  queueName: string;
  options: ResolvedWorkerOptions;
  connections: WorkerConnections;
  limits: WorkerLimits;
  lockManager: LockManager;
  processor: ProcessorFunction;
  sandbox?: SandboxPool;
  /** Jobs the worker holds at most (concurrency + prefetch). */
  holds: number;
  slots?: RunSlots;
  metrics(): MetricsRecorder | undefined;
  partitionFetcher(): PartitionFetcher | undefined;
  running(): number;
  emit<E extends PlainEvent>(event: E, ...args: WorkerEvents[E]): void;
  reportError(error: Error): void;
}

/**
 * What each lane needs of its worker: its connections and options, and where its jobs' events
 * go (the worker's events, its metrics, the stalled sweep's outcome for the LockManager, the
 * partition fetcher and the stall spans).
 */
export function laneOwnerOf(parts: LaneOwnerParts): LaneOwner {
  const { client, blockingClient } = parts.connections;
  const { options, limits, lockManager, workerId, emit } = parts;
  const { partitions, telemetry } = options;
  const stallSpans = telemetry && new StallSpans(telemetry, client, parts.queueName, parts.reportError);
  return {
    workerId, queueName: parts.queueName, partitions, client, blockingClient, options, limits, lockManager,
    processor: parts.sandbox?.processor ?? parts.processor, sandboxed: parts.sandbox !== undefined,
    runnerEvents: {
      active: (job) => emit('active', job),
      completed: (job, result) => {
        parts.metrics()?.count('completed');
        emit('completed', job, result);
      },
      failed: (job, error, willRetry) => {
        if (!willRetry) parts.metrics()?.count('failed');
        emit('failed', job, error, willRetry);
      },
      lockLost: (job, error) => emit('lockLost', job, error),
      error: parts.reportError,
    },
    onProgress: (job, progress) => emit('progress', job, progress),
    onSwept: (lane, result) => {
      lockManager.reportStalled(lane.keys.queueName, workerId, result);
      // Back in wait: work for any worker. To failed: room in a partition full under partitionConcurrency.
      if (result.movedToWait.length > 0 || result.movedToFailed.length > 0) parts.partitionFetcher()?.announce(lane);
      // To failed under a queue-wide concurrency: a slot freed that no marker announced (the sweep sets one for wait only).
      if (result.movedToFailed.length > 0 && Number.isFinite(limits.globalConcurrency)) void client.zadd(lane.keys.marker, 0, '0').catch(() => undefined);
      for (const { jobId } of result.movedToWait) emit('stalled', jobId, 'wait');
      for (const { jobId } of result.movedToFailed) emit('stalled', jobId, 'failed');
      if (stallSpans) void stallSpans.record(lane.keys, result, partitions === 1 ? undefined : lane.index);
    },
    onSweepError: parts.reportError,
    running: parts.running,
    holds: parts.holds,
    slots: parts.slots,
  };
}
