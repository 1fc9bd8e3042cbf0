import { defineConfig } from 'vitest/config';

/**
 * Projects: `unit:*` are fast and beside the code (run by `pnpm check`); `integration` talks to a
 * real redis-server and the sandbox over HTTP; `deploy` builds the deployable folder and runs it in
 * production mode; `topology` runs brokers on a real Redis Cluster and Sentinel set; `e2e` drives
 * real browsers; `image` builds server/Dockerfile and runs it on a real Docker engine; `kubernetes`
 * renders deploy/kubernetes/ and checks every object and alert; `release` checks the version in
 * every place, the build's revision and the SBOM of the broker's production dependencies;
 * `bootstrap` runs the README's two commands on a fresh clone whose npm registry cannot be reached;
 * `upgrade` starts this release on a Redis written by the previous one (test/upgrade/fixtures/).
 */
export default defineConfig({
  test: {
    reporters: ['default', './test/support/summary-reporter.ts'],
    projects: [
      { test: { name: 'unit:shared', include: ['shared/src/**/*.test.ts'] } },
      {
        test: {
          name: 'unit:server',
          include: ['server/src/**/*.test.ts', 'server/scripts/**/*.test.ts'],
        },
      },
      { test: { name: 'unit:sandbox', include: ['test/sandbox/src/**/*.test.ts'] } },
      'extension/vitest.config.ts',
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          globalSetup: ['test/support/require-tools.ts'],
          // Every answer of the brokers it starts, checked against docs/openapi.json.
          setupFiles: ['test/support/contract-setup.ts'],
          testTimeout: 30_000,
          hookTimeout: 30_000,
        },
      },
      {
        test: {
          name: 'hardening',
          include: ['test/hardening/**/*.test.ts'],
          globalSetup: ['test/support/require-tools.ts'],
          testTimeout: 120_000,
          hookTimeout: 120_000,
          fileParallelism: false,
        },
      },
      {
        test: {
          name: 'bootstrap',
          include: ['test/bootstrap/**/*.test.ts'],
          testTimeout: 60_000,
        },
      },
      {
        test: {
          name: 'deploy',
          include: ['test/deploy/**/*.test.ts'],
          globalSetup: ['test/support/require-tools.ts'],
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          name: 'kubernetes',
          include: ['test/kubernetes/**/*.test.ts'],
          globalSetup: ['test/support/require-tools.ts', 'test/support/require-kubectl.ts'],
          testTimeout: 60_000,
        },
      },
      {
        test: {
          name: 'release',
          include: ['test/release/**/*.test.ts'],
          globalSetup: ['test/support/require-tools.ts'],
          testTimeout: 300_000,
          hookTimeout: 180_000,
        },
      },
      {
        test: {
          name: 'upgrade',
          include: ['test/upgrade/**/*.test.ts'],
          globalSetup: ['test/support/require-tools.ts'],
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          name: 'topology',
          include: ['test/topology/**/*.test.ts'],
          globalSetup: ['test/support/require-tools.ts'],
          testTimeout: 90_000,
          // A Cluster with replicas waits for them to sync before its brokers start.
          hookTimeout: 180_000,
          // One deployment at a time: each file runs a Redis Cluster or Sentinel set and three
          // brokers, and their failovers are timed on the real clock of a 2-core machine.
          fileParallelism: false,
          // (Vitest runs the files of such projects last, one at a time, after every other suite.)
        },
      },
      {
        test: {
          name: 'soak',
          // test/soak: the checker on histories made by hand, the defects planted to prove it, the
          // seeded two-minute soak on standalone and Sentinel (invariants only, no timings).
          include: ['test/soak/**/*.test.ts'],
          globalSetup: ['test/support/require-tools.ts'],
          testTimeout: 600_000,
          hookTimeout: 180_000,
          // One system at a time: each runs three brokers and a Redis set on a 2-core machine.
          fileParallelism: false,
        },
      },
      {
        test: {
          name: 'image',
          include: ['test/image/**/*.test.ts'],
          globalSetup: [
            'test/support/require-tools.ts',
            'test/support/require-kubectl.ts',
            'test/image/global-setup.ts',
          ],
          testTimeout: 120_000,
          // The global setup may make the base image (debootstrap) and builds server/Dockerfile.
          hookTimeout: 900_000,
          // One file at a time: the SBOM's scan of the image's filesystem takes both cores for a
          // minute, and the other files time a drain and wait on health checks.
          fileParallelism: false,
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          globalSetup: ['test/support/require-tools.ts', 'test/e2e/global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 180_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
