// Builds the inspector into crates/server/inspector/ (index.html, inspector.js, inspector.css:
// minified, with fixed names, no hashes and no source maps, so the same sources always give the
// same bytes).
//
//   node scripts/build.mjs            writes the files the server embeds
//   node scripts/build.mjs --check    builds into a temporary directory and fails, naming the
//                                     files, when they differ from the checked-in ones
//   node scripts/build.mjs --out DIR  writes them to DIR

import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, "..");
const checkedIn = resolve(root, "../../crates/server/inspector");
export const FILES = ["index.html", "inspector.js", "inspector.css"];

export async function build(out) {
  mkdirSync(out, { recursive: true });
  const common = { bundle: true, minify: true, write: false, legalComments: "none", logLevel: "warning", charset: "utf8" };
  const js = await esbuild.build({
    ...common,
    entryPoints: [join(root, "src/main.ts")],
    format: "iife",
    target: "es2020",
    outfile: join(out, "inspector.js"),
  });
  const css = await esbuild.build({
    ...common,
    entryPoints: [join(root, "src/inspector.css")],
    outfile: join(out, "inspector.css"),
  });
  for (const file of [...js.outputFiles, ...css.outputFiles]) writeFileSync(file.path, file.contents);
  writeFileSync(join(out, "index.html"), minifyHtml(readFileSync(join(root, "src/index.html"), "utf8")));
}

// The page on one line, as the script and the stylesheet are: each line break with the
// indentation around it becomes one space, which renders the same (the page has no <pre> and
// its <textarea>s are empty).
function minifyHtml(html) {
  return html.replace(/\s*\n\s*/g, " ").trim() + "\n";
}

const args = process.argv.slice(2);
if (args[0] === "--check") {
  const temp = mkdtempSync(join(tmpdir(), "openharness-inspector-"));
  try {
    await build(temp);
    const stale = FILES.filter((name) => {
      const path = join(checkedIn, name);
      return !existsSync(path) || !readFileSync(path).equals(readFileSync(join(temp, name)));
    });
    if (stale.length > 0) {
      console.error(`crates/server/inspector is stale: ${stale.join(", ")} differ from a fresh build.`);
      console.error("Run `npm run build` in packages/inspector and commit the result.");
      process.exit(1);
    }
    console.log(`crates/server/inspector is fresh (${FILES.join(", ")}).`);
  } finally {
    rmSync(temp, { recursive: true, force: true });
  }
} else {
  const out = args[0] === "--out" && args[1] ? resolve(args[1]) : checkedIn;
  await build(out);
  console.log(`built ${FILES.join(", ")} into ${out}`);
}
