// Copies the screenshots the browser tests took (target/screenshots/, ignored) over the README's
// (docs/screenshots/, tracked). Tests never write tracked files; run this after `npm test` when
// the pages changed and the README should show them.
import { copyFileSync, existsSync, readdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const from = join(repoRoot, "target", "screenshots");
const to = join(repoRoot, "docs", "screenshots");
if (!existsSync(from)) {
  console.error(`no screenshots in ${from}: run \`npm test\` in packages/ first`);
  process.exit(1);
}
const shots = readdirSync(from).filter((name) => name.endsWith(".png"));
for (const name of shots) {
  copyFileSync(join(from, name), join(to, name));
  console.log(`docs/screenshots/${name}`);
}
