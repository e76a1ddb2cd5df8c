/**
 * A real `openharness serve` for the tests: the binary cargo built (target/debug/openharness at
 * the repo root, or $OPENHARNESS_BIN), on 127.0.0.1 at a free port, over a fresh redb store into
 * which the fixture sessions (fixtures/*.jsonl) are imported first, with `--chat-workflow chat`
 * (new chats of `POST /api/chat` run the `chat` workflow, so `useChat`'s own chat ids work).
 * Never a mock.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
export const repoRoot = resolve(here, "..", "..");
/**
 * Where browser tests write their screenshots: an ignored folder, so a test run never changes
 * a tracked file. `npm run screenshots` (in packages/) copies them over docs/screenshots/.
 */
export const screenshotsDir = join(repoRoot, "target", "screenshots");
export const fixturesDir = join(here, "fixtures");

/** The weather chat imported from fixtures/weather-chat.jsonl (text deltas, tools, a retry). */
export const WEATHER_CHAT = "01a20000-0000-7000-8000-000000000001";

/**
 * Four planner-executor demos waiting for the answer to their publish question, imported from
 * fixtures/approval-release.jsonl: recorded by `openharness demo --no-answer` with the question
 * marked as an approval (`"approval": true`, as `InputRequested::approval` records it; the demo
 * itself asks a plain question), so the server shows it as one. One per AI SDK release of
 * test/chat-sdk.test.ts, since answering one ends its wait.
 */
export const APPROVAL_SESSIONS = [
  "01a20000-0000-7000-8000-00000000a001",
  "01a20000-0000-7000-8000-00000000a002",
  "01a20000-0000-7000-8000-00000000a003",
  "01a20000-0000-7000-8000-00000000a004",
] as const;

export interface RunningServer {
  /** `http://127.0.0.1:<port>` */
  url: string;
  store: string;
  stop(): Promise<void>;
}

/** The binary, or an error that says how to build it. */
export function binary(): string {
  const bin = process.env.OPENHARNESS_BIN ?? join(repoRoot, "target", "debug", "openharness");
  if (!existsSync(bin)) {
    throw new Error(
      `the openharness binary is missing at ${bin}: build it first with\n` +
        `  cd ${repoRoot} && cargo build -p openharness-cli --bin openharness\n` +
        `(or point OPENHARNESS_BIN at one). The tests run against a real server, never a mock.`,
    );
  }
  return bin;
}

function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const server = createServer();
    server.once("error", fail);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => ok(port));
    });
  });
}

export interface ServerOptions {
  /**
   * `OPENHARNESS_SCRIPTED_DELAY_MS`: how long each answer of the scripted models waits, so a
   * turn is still running while a test reloads a page (default: no delay).
   */
  scriptedDelayMs?: number;
}

/** Starts a server over a new store holding the fixture sessions. */
export async function startServer(options: ServerOptions = {}): Promise<RunningServer> {
  const bin = binary();
  const dir = mkdtempSync(join(tmpdir(), "openharness-packages-"));
  const store = join(dir, "store.redb");
  for (const file of readdirSync(fixturesDir).filter((f) => f.endsWith(".jsonl")).sort()) {
    const imported = spawnSync(bin, ["--store", store, "import", join(fixturesDir, file)], { encoding: "utf8" });
    if (imported.status !== 0) {
      throw new Error(`importing ${file} failed (exit ${imported.status}):\n${imported.stderr}${imported.stdout}`);
    }
  }
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const env: NodeJS.ProcessEnv = { ...process.env, RUST_LOG: process.env.RUST_LOG ?? "warn" };
    delete env.OPENHARNESS_SCRIPTED_DELAY_MS;
    if (options.scriptedDelayMs !== undefined) env.OPENHARNESS_SCRIPTED_DELAY_MS = String(options.scriptedDelayMs);
    // A master key, so `/v1` providers (the fake model of fake-model.ts) can keep an API key.
    env.OPENHARNESS_MASTER_KEYS ??= `e2e:${"3d".repeat(32)}`;
    const child = spawn(bin, ["--store", store, "serve", "--addr", `127.0.0.1:${port}`, "--chat-workflow", "chat"], {
      stdio: ["ignore", "pipe", "pipe"],
      env,
    });
    let output = "";
    child.stdout?.on("data", (d: Buffer) => (output += d.toString()));
    child.stderr?.on("data", (d: Buffer) => (output += d.toString()));
    try {
      await waitHealthy(url, child, () => output);
      return {
        url,
        store,
        stop: async () => {
          await stopChild(child);
          rmSync(dir, { recursive: true, force: true });
        },
      };
    } catch (err) {
      lastError = err;
      await stopChild(child);
    }
  }
  rmSync(dir, { recursive: true, force: true });
  throw lastError;
}

async function waitHealthy(url: string, child: ChildProcess, output: () => string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`openharness serve exited (${child.exitCode}):\n${output()}`);
    try {
      const response = await fetch(`${url}/health`);
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`openharness serve did not answer /health within 20 s:\n${output()}`);
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((done) => {
    const kill = setTimeout(() => child.kill("SIGKILL"), 3000);
    child.once("exit", () => {
      clearTimeout(kill);
      done();
    });
    child.kill("SIGINT");
  });
}
