// The size of @openharness/react for a browser app, without React: esbuild bundles src/index.ts
// (with @openharness/client) minified, react and react-dom left external, then gzip -9.
// Prints the KB; exits 1 above the 30 KB goal.
import { gzipSync } from "node:zlib";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const GOAL_KB = 30;
const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const result = await build({
  entryPoints: [join(root, "src", "index.ts")],
  bundle: true,
  minify: true,
  format: "esm",
  platform: "browser",
  target: "es2022",
  jsx: "automatic",
  external: ["react", "react-dom", "react/jsx-runtime"],
  define: { "process.env.NODE_ENV": '"production"' },
  write: false,
  outfile: "out.js",
  metafile: true,
});
const code = result.outputFiles[0].contents;
const gz = gzipSync(code, { level: 9 }).length;
const kb = (n) => (n / 1024).toFixed(1);
console.log(`@openharness/react without React: ${kb(code.length)} KB minified, ${kb(gz)} KB gzipped (goal ≤ ${GOAL_KB} KB gzipped)`);
if (gz > GOAL_KB * 1024) {
  console.error(`over the ${GOAL_KB} KB goal`);
  process.exit(1);
}
