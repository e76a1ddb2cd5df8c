import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

it("the README's quick start is examples/quickstart.tsx, the code the browser test mounts", () => {
  const readme = readFileSync(join(root, "README.md"), "utf8");
  const snippet = readFileSync(join(root, "examples", "quickstart.tsx"), "utf8");
  expect(readme).toContain("```tsx\n" + snippet + "```");
});
