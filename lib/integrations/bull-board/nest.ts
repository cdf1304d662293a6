import { QueueRegistry } from '../../nest/queue.registry.js';
import { EchoMQAdapter, type EchoMQAdapterOptions } from './echomq-adapter.js';

/** What holds a Nest app's providers: the INestApplication, or a ModuleRef. */
export interface NestProviders {
  get<T>(token: abstract new (...args: any[]) => T, options?: { strict?: boolean }): T;
}

/**
 * An EchoMQAdapter for every queue an app registered (EchoMQModule.registerQueue, in any module),
 * in registration order: `createBullBoard({ queues: echoMQBoardAdapters(app), serverAdapter })`.
 * Call it once the app is initialised (after `app.init()` or `listen()`, or in an
 * onApplicationBootstrap hook), when the queues exist. `options` go to every adapter.
 */
export function echoMQBoardAdapters(app: NestProviders, options: EchoMQAdapterOptions = {}): EchoMQAdapter[] {
  return [...app.get(QueueRegistry, { strict: false }).all().values()].map((queue) => new EchoMQAdapter(queue, options));
}
