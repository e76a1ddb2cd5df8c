import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["../e2e/global-setup.ts"],
    testTimeout: 20_000,
  },
});
