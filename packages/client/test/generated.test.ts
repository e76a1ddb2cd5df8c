import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

it("src/generated/wire.ts is what the checked-in JSON Schemas generate (npm run gen)", () => {
  const check = spawnSync(process.execPath, [join(root, "scripts", "gen.mjs"), "--check"], { encoding: "utf8" });
  expect(check.stderr).toBe("");
  expect(check.status).toBe(0);
});
