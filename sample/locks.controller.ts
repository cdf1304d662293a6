import { Controller, Sse, type MessageEvent } from '@nestjs/common';
import { map, type Observable } from 'rxjs';
import { LockManager, type LockEvent } from '../lib/index.js';

/** Streams the app's LockManager events as Server-Sent Events: GET /locks/events. */
@Controller('locks')
export class LocksController {
  constructor(private readonly locks: LockManager) {}

  @Sse('events')
  events(): Observable<MessageEvent> {
    return this.locks.events$.pipe(map((event) => ({ type: event.type, data: toPlain(event) })));
  }
}

/** An event as JSON can carry it (an Error's message, not the object). */
function toPlain(event: LockEvent): Record<string, unknown> {
  if (event.type === 'heartbeatError') return { ...event, error: event.error.message };
  return { ...event };
}
