import { defineConfig } from "vitest/config";

/**
 * End-to-end tests (`npm run test:e2e`): the service image and PostgreSQL in
 * containers, and the docker-compose stack. Files are `test/e2e/*.e2e.ts` so
 * the main suite (`test/**\/*.test.ts`) never picks them up; they share none
 * of its setup (no template database). One file at a time: each starts its
 * own containers and they measure start-up times.
 */
export default defineConfig({
  test: {
    include: ["test/e2e/**/*.e2e.ts"],
    globalSetup: ["test/e2e/globalSetup.ts"],
    testTimeout: 600_000,
    hookTimeout: 600_000,
    fileParallelism: false,
  },
});
