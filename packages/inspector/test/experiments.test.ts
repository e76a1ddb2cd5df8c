// The experiments view, in Debian's chromium against a real `openharness serve` over a store
// where `openharness demo` recorded a session and `openharness eval run` forked it into an
// experiment (two variants × two repeats from its first `task:started`): the server answers
// the experiment as `eval show --json` prints it; the page shows the cases × variants matrix
// with each scorer's mean and passes, and two runs picked open side by side from their fork
// point.

import { spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import type { Experiment, ExperimentList, SessionComparison } from "@openharness/client";
import { type Served, api, binary, screenshotsDir, serve, tempDir } from "./serve";

const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";

let server: Served;
let browser: Browser;
let store: string;
let recording: string;
/** What `openharness eval show wording --json` printed before the server took the store. */
let shown: { runs: unknown[] };

function openharness(...args: string[]): string {
  const result = spawnSync(binary(), ["--store", store, ...args], { encoding: "utf8" });
  if (result.status !== 0) throw new Error(`openharness ${args.join(" ")} failed (${result.status}): ${result.stderr}${result.stdout}`);
  return result.stdout;
}

beforeAll(async () => {
  const dir = tempDir();
  store = join(dir, "store.redb");
  openharness("demo");
  recording = (JSON.parse(openharness("sessions", "--json")) as { id: string }[])[0]!.id;
  writeFileSync(
    join(dir, "wording.toml"),
    `name = "wording"
repeats = 2

[[case]]
id = "first-task"
session = "${recording}"
at = { event = "task:started", n = 1 }
answers = ["yes"]

[[variant]]
name = "baseline"

[[variant]]
name = "broken"
description = "the completed count is off by five"
state = { completed = 5 }

[[scorer]]
name = "published"
kind = "equals"
field = { state = "/release" }
expect = "published"
`,
  );
  openharness("eval", "run", join(dir, "wording.toml"));
  shown = JSON.parse(openharness("eval", "show", "wording", "--json")) as { runs: unknown[] };
  server = await serve({ dir });
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox"] });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

test("the server answers the experiment as `eval show --json` prints it", async () => {
  const list = await api<ExperimentList>(server.url, "experiments");
  expect(list.experiments.map((e) => e.name)).toEqual(["wording"]);
  const experiment = await api<Experiment>(server.url, "experiments/wording");
  expect(experiment.definition.variants.map((v) => v.name)).toEqual(["baseline", "broken"]);
  expect(experiment.runs).toHaveLength(4);
  expect(experiment.runs).toEqual(shown.runs);
  const missing = await fetch(`${server.url}/experiments/no-such-experiment`);
  expect(missing.status).toBe(404);
});

test("the matrix shows each scorer's mean and passes per case and variant; two runs picked open side by side from their fork point", async () => {
  const experiment = await api<Experiment>(server.url, "experiments/wording");
  const page = await browser.newPage({ viewport: { width: 1440, height: 860 } });
  const problems: string[] = [];
  page.on("pageerror", (error) => problems.push(error.message));
  await page.goto(`${server.url}/`);
  await expect.poll(() => page.locator("#experiments-button").isVisible()).toBe(true);
  // The experiment's own log is no session to list.
  await page.waitForFunction(() => document.body.dataset.list === "ready");
  const listed = await page.locator("li.session").evaluateAll((items) => items.map((li) => (li as HTMLElement).dataset.session));
  expect(listed).toContain(recording);
  expect(listed.filter((id) => id?.startsWith("eval:"))).toEqual([]);
  await page.keyboard.press("e");
  await expect.poll(() => page.locator("#experiment .matrix").count()).toBe(1);
  expect(await page.locator("#experiment .matrix th").allTextContents()).toEqual(["case", "baseline", "broken", "first-task"]);
  for (const variant of ["baseline", "broken"]) {
    const runs = experiment.runs.filter((r) => r.run.variant === variant);
    const values = runs.map((r) => r.scores.published!.value ?? 0);
    const mean = (values.reduce((a, b) => a + b, 0) / values.length).toFixed(2);
    const passed = runs.filter((r) => r.scores.published!.passed).length;
    const cell = page.locator(`#experiment td[data-variant="${variant}"]`);
    expect(await cell.locator(".score").textContent()).toBe(`published ${mean} · ${passed}/${runs.length}`);
    expect(await cell.locator(".run").allTextContents()).toEqual(["#0", "#1"]);
  }
  // The baseline passes and the broken variant does not: the colours say so.
  expect(await page.locator('#experiment td[data-variant="baseline"] .score').getAttribute("class")).toContain("pass");
  expect(await page.locator('#experiment td[data-variant="broken"] .score').getAttribute("class")).toContain("fail");

  await page.locator(`#experiment td[data-variant="baseline"] .run`).first().click();
  mkdirSync(screenshotsDir, { recursive: true });
  await page.screenshot({ path: join(screenshotsDir, "experiments.png") });
  await page.locator(`#experiment td[data-variant="baseline"] .run`).first().click();

  const runOf = (variant: string) => experiment.runs.find((r) => r.run.variant === variant && r.run.repeat === 0)!.run.session!;
  const [a, b] = [runOf("baseline"), runOf("broken")];
  expect(await page.locator("#compare-runs").isDisabled()).toBe(true);
  await page.locator(`#experiment [data-run="${a}"]`).click();
  await page.locator(`#experiment [data-run="${b}"]`).click();
  await page.locator("#compare-runs").click();
  // The first run opens, compared with the second: they share the recording up to the fork point.
  await page.waitForFunction((session) => document.querySelector("li.session.selected")?.getAttribute("data-session") === session, a);
  await expect.poll(() => page.locator("#compare").getAttribute("data-state"), { timeout: 10_000 }).toBe("shown");
  const comparison = await api<SessionComparison>(server.url, `sessions/${a}/compare?with=${b}`);
  expect(comparison.ancestor?.session).toBe(recording);
  expect(await page.locator("#compare .compare-verdict").textContent()).toBe(
    `${comparison.agree} events agree; they part at position ${comparison.agree + 1} (counted from the root).`,
  );
  expect(await page.locator('#compare .compare-side[data-side="A"]').count()).toBe(1);
  expect(await page.locator('#compare .compare-side[data-side="B"]').count()).toBe(1);
  expect(problems).toEqual([]);
  await page.close();
}, 60_000);
