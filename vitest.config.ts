import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/helpers/globalSetup.ts"],
    testTimeout: 60_000,
    hookTimeout: 180_000,
    // Integration files each get their own database; two workers suit 2 cores.
    maxWorkers: 2,
  },
});
