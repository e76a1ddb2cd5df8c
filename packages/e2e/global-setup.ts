/**
 * Vitest global setup shared by the packages: one real `openharness serve` for the run, its URL
 * given to the tests as `inject("serverUrl")`, stopped at teardown.
 */
import type { TestProject } from "vitest/node";
import { startServer, type RunningServer } from "./server.js";

let server: RunningServer | undefined;

export async function setup(project: TestProject): Promise<void> {
  server = await startServer();
  project.provide("serverUrl", server.url);
}

export async function teardown(): Promise<void> {
  await server?.stop();
}

declare module "vitest" {
  export interface ProvidedContext {
    serverUrl: string;
  }
}
