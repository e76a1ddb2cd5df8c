import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.{ts,tsx}"],
    environment: "happy-dom",
    environmentOptions: {
      // The page and the real server are on different ports of 127.0.0.1.
      happyDOM: { settings: { fetch: { disableSameOriginPolicy: true } } },
    },
    globalSetup: ["../e2e/global-setup.ts"],
    testTimeout: 20_000,
  },
});
