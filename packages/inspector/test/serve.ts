// A real `openharness serve` for the inspector's browser tests and benchmark: the binary cargo
// built (target/debug/openharness, or $OPENHARNESS_BIN), on 127.0.0.1 at a free port, over a
// redb store in a temporary directory (or one prepared by the caller), with API keys if asked.
// With INSPECTOR_PAGE=checkout, the page's files come from the checked-in build instead of the
// binary (see `pageProxy`).

import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { request as httpRequest, createServer as createHttpServer } from "node:http";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
/**
 * Where browser tests write their screenshots: an ignored folder, so a test run never changes
 * a tracked file. `npm run screenshots` (in packages/) copies them over docs/screenshots/.
 */
export const screenshotsDir = resolve(repoRoot, "target", "screenshots");

export interface Served {
  url: string;
  dir: string;
  store: string;
  stop(): Promise<void>;
}

export function binary(): string {
  const bin = process.env.OPENHARNESS_BIN ?? join(repoRoot, "target/debug/openharness");
  if (!existsSync(bin)) {
    throw new Error(`no openharness binary at ${bin}: run \`cargo build -p openharness-cli --bin openharness\` in ${repoRoot} first`);
  }
  return bin;
}

/** A fresh temporary directory for a store. */
export function tempDir(): string {
  return mkdtempSync(join(tmpdir(), "openharness-inspector-"));
}

/** Runs `openharness --store <store> import <file>`. */
export function importJsonl(store: string, file: string, bin = binary()): void {
  const result = spawnSync(bin, ["--store", store, "import", file], { encoding: "utf8" });
  if (result.status !== 0) throw new Error(`import failed (${result.status}): ${result.stderr}${result.stdout}`);
}

/**
 * `basePath`: serve under a path (`--base-path /harness`); `url` then ends with it, so
 * `${url}/sessions` is still the API. `bin`: another binary than `binary()`. `args`: more
 * flags for `serve`.
 */
export async function serve(options: { apiKey?: string; dir?: string; basePath?: string; bin?: string; args?: string[] } = {}): Promise<Served> {
  const dir = options.dir ?? tempDir();
  const store = join(dir, "store.redb");
  const args = ["--store", store, "serve"];
  if (options.apiKey) {
    const keys = join(dir, "keys");
    writeFileSync(keys, `${options.apiKey}\n`);
    args.push("--api-keys-file", keys);
  }
  if (options.basePath) args.push("--base-path", options.basePath);
  args.push(...(options.args ?? []));
  let last: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}${options.basePath ?? ""}`;
    const child = spawn(options.bin ?? binary(), [...args, "--addr", `127.0.0.1:${port}`], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, RUST_LOG: process.env.RUST_LOG ?? "warn" },
    });
    let output = "";
    child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    try {
      await healthy(url, child, () => output);
      const proxy = process.env.INSPECTOR_PAGE === "checkout" ? await pageProxy(port, options.basePath ?? "") : null;
      return {
        url: proxy ? `${proxy.origin}${options.basePath ?? ""}` : url,
        dir,
        store,
        async stop() {
          await proxy?.close();
          await stop(child);
          if (!options.dir) rmSync(dir, { recursive: true, force: true });
        },
      };
    } catch (error) {
      last = error;
      await stop(child);
    }
  }
  throw last;
}

/**
 * A proxy in front of the server at `port` that answers the page's three files from
 * `crates/server/inspector/` (the checked-in build, the page written the way the server writes
 * it: with a `<base>` naming the directory it is served from) instead of those the binary
 * embeds, and passes everything else through (streams included). For a page built after the
 * binary: its tests run before cargo embeds it (INSPECTOR_PAGE=checkout). CI builds the binary
 * after the page and never sets it.
 */
async function pageProxy(port: number, basePath: string): Promise<{ origin: string; close(): Promise<void> }> {
  const built = join(repoRoot, "crates/server/inspector");
  const pages = new Set(basePath === "" ? ["/", "/index.html"] : [basePath, `${basePath}/`, `${basePath}/index.html`]);
  const assets: Record<string, [string, string]> = {
    [`${basePath}/inspector.js`]: ["inspector.js", "text/javascript; charset=utf-8"],
    [`${basePath}/inspector.css`]: ["inspector.css", "text/css; charset=utf-8"],
  };
  const server = createHttpServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0]!;
    if (req.method === "GET" && pages.has(path)) {
      const dir = path.endsWith("index.html") ? path.slice(0, -"index.html".length) : path.endsWith("/") ? path : `${path}/`;
      const html = readFileSync(join(built, "index.html"), "utf8").replace('<meta charset="utf-8">', `<meta charset="utf-8">\n<base href="${dir}">`);
      res.writeHead(200, { "content-type": "text/html; charset=utf-8", "cache-control": "no-cache" });
      res.end(html);
      return;
    }
    const asset = req.method === "GET" ? assets[path] : undefined;
    if (asset) {
      res.writeHead(200, { "content-type": asset[1], "cache-control": "no-cache" });
      res.end(readFileSync(join(built, asset[0])));
      return;
    }
    const upstream = httpRequest({ host: "127.0.0.1", port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on("error", (error) => {
      if (!res.headersSent) res.writeHead(502, { "content-type": "text/plain" });
      res.end(String(error));
    });
    res.on("close", () => upstream.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolveListen) => server.listen(0, "127.0.0.1", resolveListen));
  const address = server.address();
  const proxyPort = typeof address === "object" && address ? address.port : 0;
  return {
    origin: `http://127.0.0.1:${proxyPort}`,
    close: () =>
      new Promise((resolveClose) => {
        server.closeAllConnections();
        server.close(() => resolveClose());
      }),
  };
}

function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolvePort(port));
    });
  });
}

async function healthy(url: string, child: ChildProcess, output: () => string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`openharness serve exited (${child.exitCode}): ${output()}`);
    try {
      if ((await fetch(`${url}/health`)).ok) return;
    } catch {
      // Not listening yet.
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`openharness serve did not answer /health within 20 s: ${output()}`);
}

function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolveStop) => {
    const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
    child.once("exit", () => {
      clearTimeout(timer);
      resolveStop();
    });
    child.kill("SIGTERM");
  });
}

/** JSON from the server, failing on any status but 2xx. */
export async function api<T>(base: string, path: string, init: { method?: string; body?: unknown; key?: string } = {}): Promise<T> {
  const headers: Record<string, string> = { accept: "application/json" };
  if (init.body !== undefined) headers["content-type"] = "application/json";
  if (init.key) headers["authorization"] = `Bearer ${init.key}`;
  const request: RequestInit = { method: init.method ?? "GET", headers };
  if (init.body !== undefined) request.body = JSON.stringify(init.body);
  const response = await fetch(`${base}/${path}`, request);
  if (!response.ok) throw new Error(`${request.method} ${path}: ${response.status} ${await response.text()}`);
  return (await response.json()) as T;
}

/** Waits until `check` returns a value (not undefined/false), polling. */
export async function until<T>(what: string, check: () => Promise<T | undefined | false>, timeout = 15_000): Promise<T> {
  const deadline = Date.now() + timeout;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * A server over the store in `dir` for the scale tests: an optimized build
 * (target/release/openharness, or $OPENHARNESS_BIN) when it embeds the current page, else the
 * debug build; `optimized` says which (their timing goals are asserted against it only).
 * `prepare(bin)` fills the store first, with the binary to import with (the optimized one
 * imports faster, whatever page it embeds).
 */
export async function serveForScale(dir: string, prepare: (bin: string) => void | Promise<void>): Promise<{ server: Served; optimized: boolean }> {
  const release = join(repoRoot, "target/release/openharness");
  const candidates = process.env.OPENHARNESS_BIN ? [process.env.OPENHARNESS_BIN] : existsSync(release) ? [release, binary()] : [binary()];
  await prepare(candidates[0]!);
  const built = readFileSync(join(repoRoot, "crates/server/inspector/inspector.js"), "utf8");
  for (const bin of candidates) {
    const server = await serve({ dir, bin });
    // A binary embeds the page it was built with: one older than the checked-in build tests an older page.
    if ((await (await fetch(`${server.url}/inspector.js`)).text()) === built) {
      const optimized = !bin.includes("/debug/");
      console.log(`server: ${optimized ? "optimized" : "debug build: the timing goals are printed, not asserted"}`);
      return { server, optimized };
    }
    await server.stop();
    console.log(`${bin} embeds an older inspector: not used`);
  }
  throw new Error("every openharness binary embeds an older inspector: run `cargo build -p openharness-cli --bin openharness` after `npm run build`");
}

/** Waits until `session` has ended its turn (not running, here or anywhere); its summary then. */
export async function idle<T extends { status: string; runningHere?: boolean }>(url: string, session: string): Promise<T> {
  return until(`${session} to end its turn`, async () => {
    const summary = await api<T>(url, `sessions/${session}`);
    return summary.status !== "running" && !summary.runningHere ? summary : undefined;
  });
}
