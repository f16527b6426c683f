import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Two cores: more workers only make each file slower.
    maxWorkers: 2,
    // Collects the responses the OpenAPI contract checked and sums them up at the end.
    globalSetup: ['test/support/openapi-contract-setup.ts'],
  },
})
