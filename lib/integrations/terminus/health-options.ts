import { EchoMQOptionError } from '../../protocol/errors.js';
import { describe } from '../../protocol/names.js';

/** What EchoMQHealthIndicator.isHealthy checks, and how strictly. */
export interface EchoMQHealthOptions {
  /** The registered queues to look at (registerQueue names). Default every registered queue. */
  queues?: string[];
  /** ms the whole check may take; past it the indicator is down, Redis taken for unreachable. */
  timeoutMs: number;
  /** A queue whose backlog (jobs ready to run and not started: wait, paused, prioritized) passes this is reported. */
  maxWaiting?: number;
  /** A queue with more jobs failed (finally, not retried) in the last 60 s than this is reported. */
  maxFailedPerMinute?: number;
  /**
   * What a threshold passed (maxWaiting, maxFailedPerMinute) makes the indicator: `degraded` (the
   * health check still answers 200, its status `degraded`) or `down` (503). Default `degraded`:
   * a backlog is a reason to look, rarely one to take the app out of service.
   */
  overThreshold?: 'degraded' | 'down';
}

/** The options, checked: each wrong field is refused by name before Redis is asked anything. */
export function checkHealthOptions(options: unknown): Required<Pick<EchoMQHealthOptions, 'timeoutMs' | 'overThreshold'>> & EchoMQHealthOptions {
  if (typeof options !== 'object' || options === null) throw new EchoMQOptionError('isHealthy options', `must be an object with at least timeoutMs, got ${describe(options)}`);
  const { queues, timeoutMs, maxWaiting, maxFailedPerMinute, overThreshold } = options as EchoMQHealthOptions;
  if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) throw new EchoMQOptionError('timeoutMs', `must be a whole number of ms above 0, got ${describe(timeoutMs)}`);
  if (queues !== undefined) {
    if (!Array.isArray(queues)) throw new EchoMQOptionError('queues', `must be an array of registered queue names, got ${describe(queues)}`);
    queues.forEach((name, i) => {
      if (typeof name !== 'string' || name.length === 0) throw new EchoMQOptionError(`queues[${i}]`, `must be a queue name, got ${describe(name)}`);
    });
  }
  for (const [field, value] of [['maxWaiting', maxWaiting], ['maxFailedPerMinute', maxFailedPerMinute]] as const) {
    if (value !== undefined && (!Number.isInteger(value) || value < 0)) throw new EchoMQOptionError(field, `must be a whole number >= 0, got ${describe(value)}`);
  }
  if (overThreshold !== undefined && overThreshold !== 'degraded' && overThreshold !== 'down') {
    throw new EchoMQOptionError('overThreshold', `must be 'degraded' or 'down', got ${describe(overThreshold)}`);
  }
  return { ...(options as EchoMQHealthOptions), timeoutMs, overThreshold: overThreshold ?? 'degraded' };
}
