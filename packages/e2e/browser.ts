/**
 * The browser side of the end-to-end tests: the test pages (pages/*.tsx) bundled by esbuild, a
 * page server on 127.0.0.1 that serves them and passes every other request on to the real
 * `openharness serve` (so pages and API share an origin, streaming untouched), and Debian's
 * chromium driven by playwright-core (never a downloaded browser).
 */
import { existsSync } from "node:fs";
import { createServer, request as httpRequest, type Server } from "node:http";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { chromium, type Browser } from "playwright-core";

const here = dirname(fileURLToPath(import.meta.url));
export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

/** Each page's bundle, by name (`chat`, `usechat-oldest`, ...). */
export async function bundlePages(names: string[]): Promise<Map<string, string>> {
  const result = await build({
    entryPoints: Object.fromEntries(names.map((n) => [n, join(here, "pages", `${n}.tsx`)])),
    bundle: true,
    write: false,
    outdir: "/out",
    format: "esm",
    platform: "browser",
    target: "es2022",
    jsx: "automatic",
    minify: false,
    sourcemap: "inline",
    define: { "process.env.NODE_ENV": '"development"' },
    logLevel: "silent",
  });
  const out = new Map<string, string>();
  for (const file of result.outputFiles) out.set(file.path.replace(/^\/out\//, "").replace(/\.js$/, ""), file.text);
  return out;
}

export interface PageServer {
  url: string;
  /** Every request passed on to the API: `METHOD path`. */
  proxied: string[];
  close(): Promise<void>;
}

/** Serves `/<name>.html` and `/<name>.js`; passes everything else on to `api`. */
export function servePages(bundles: Map<string, string>, api: string): Promise<PageServer> {
  const target = new URL(api);
  const proxied: string[] = [];
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0]!;
    if (path === "/favicon.ico") {
      res.writeHead(204);
      res.end();
      return;
    }
    const page = /^\/([\w-]+)\.(html|js)$/.exec(path);
    if (page && bundles.has(page[1]!)) {
      if (page[2] === "html") {
        res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
        res.end(
          `<!doctype html><html><head><meta charset="utf-8"><title>${page[1]}</title></head>` +
            `<body><div id="root"></div><script type="module" src="/${page[1]}.js"></script></body></html>`,
        );
      } else {
        res.writeHead(200, { "content-type": "text/javascript; charset=utf-8" });
        res.end(bundles.get(page[1]!));
      }
      return;
    }
    proxied.push(`${req.method} ${req.url}`);
    const upstream = httpRequest(
      { host: target.hostname, port: target.port, path: req.url, method: req.method, headers: { ...req.headers, host: target.host } },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on("error", (err) => {
      if (!res.headersSent) res.writeHead(502, { "content-type": "text/plain" });
      res.end(String(err));
    });
    req.pipe(upstream);
  });
  return new Promise((ok) => {
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      ok({
        url: `http://127.0.0.1:${port}`,
        proxied,
        close: () =>
          new Promise<void>((done) => {
            server.closeAllConnections();
            server.close(() => done());
          }),
      });
    });
  });
}

/** Debian's chromium, headless; a clear error when it is not installed. */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`chromium is missing at ${CHROMIUM}: install it with \`apt-get install -y chromium\` (or set CHROMIUM_PATH)`);
  }
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
}
