import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/helpers/globalSetup.ts"],
    // Generous: machines running the suite are busy. Each wait inside a test has its own bound, shorter
    // than this, whose message names what it waited for (test/helpers/service.ts waitFor: 120 s;
    // test/helpers/cli.ts: 240 s a command), so this one fires only when no inner wait did.
    testTimeout: 300_000,
    hookTimeout: 180_000,
    // Integration files each get their own database; two workers suit 2 cores.
    maxWorkers: 2,
  },
});
