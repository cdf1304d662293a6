// The tests' jest environment: Node's, plus one step at the end of each test file. It closes the
// connections the support helpers handed out (test/support/redis.ts), after every afterAll hook of
// the file has run, so the file's queues and workers close before the connections they share.
import { TestEnvironment } from 'jest-environment-node';

export default class EchoMQTestEnvironment extends TestEnvironment {
  async teardown() {
    await this.global.__echomqCloseTestConnections?.();
    await super.teardown();
  }
}
