import { Injectable } from '@nestjs/common';
import type { QueueSettings } from './echomq.interfaces.js';

/** What one registerQueue / registerQueueAsync entry said about its queue's schedulers, as given. */
export interface SchedulerRegistration {
  queueName: string;
  configKey: string;
  /** The registration, for errors: `registerQueue("reports")`. */
  where: string;
  schedulers: unknown;
  removeUndeclaredSchedulers: unknown;
}

/**
 * The scheduler settings of the queue registrations, kept until bootstrap checks and applies them
 * (SchedulerBootstrap): the async ones exist only once their factories ran.
 */
@Injectable()
export class RegisteredSchedulers {
  private readonly found: SchedulerRegistration[] = [];

  /** Keeps a registration's scheduler settings; returns the rest, the Queue's own settings. */
  take(queueName: string, configKey: string, where: string, settings: QueueSettings): Omit<QueueSettings, 'schedulers' | 'removeUndeclaredSchedulers'> {
    const { schedulers, removeUndeclaredSchedulers, ...queueSettings } = settings;
    if (schedulers !== undefined || removeUndeclaredSchedulers !== undefined) {
      this.found.push({ queueName, configKey, where, schedulers, removeUndeclaredSchedulers });
    }
    return queueSettings;
  }

  get registrations(): readonly SchedulerRegistration[] {
    return this.found;
  }
}
