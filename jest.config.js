/**
 * Jest runs the ESM TypeScript sources directly (ts-jest, NODE_OPTIONS=--experimental-vm-modules).
 * ECHOMQ_TEST_CLUSTER=1 (npm run test:cluster) runs the same suite on a three-master Redis Cluster.
 */
export default {
  testEnvironment: '<rootDir>/test/support/environment.js',
  extensionsToTreatAsEsm: ['.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: 'tsconfig.json' }] },
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  testMatch: ['<rootDir>/test/**/*.test.ts'],
  globalSetup: '<rootDir>/test/support/global-setup.js',
  globalTeardown: '<rootDir>/test/support/global-teardown.js',
  testTimeout: 30000,
};
