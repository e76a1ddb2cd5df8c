// The inspector at 100,000 events, in headless Debian chromium against a real `openharness
// serve`: a generated 100,001-event chat session (bench/generate.ts) imported with
// `openharness import`, then
//   - time to first screen: navigation start → the timeline around the cursor and the event at
//     the cursor painted (and, separately, → the state tree and patch painted), over 5 loads;
//   - keyboard step latency: keydown → the next frame after the cursor, event, patch and state
//     of the new position are in the page, over 300 steps back from the end (k, as fast as the
//     page finishes each), over 300 steps from the middle, and over 200 steps of the compact
//     view (one row per agent call: each step skips a call's 98 events);
//   - goto latency: `g` + a random position + Enter (never read before) → state painted.
// Goals (issue 14): first screen ≤ 1 s, step p95 ≤ 50 ms. Prints a table; writes nothing.
// Set OPENHARNESS_BIN to a release build for figures comparable to a deployment.

import { cpus, loadavg } from "node:os";
import { join } from "node:path";
import { type Browser, type Page, chromium } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import { type Served, binary, importJsonl, serve, tempDir } from "../test/serve";
import { generateChat } from "./generate";

const TURNS = Number(process.env.BENCH_TURNS ?? 1000);
const DELTAS = 95;

let server: Served;
let browser: Browser;
let session: string;
let len: number;
const figures: [string, string][] = [];

function stats(samples: number[]): { p50: number; p95: number; max: number } {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  return { p50: at(0.5), p95: at(0.95), max: sorted[sorted.length - 1]! };
}

const ms = (value: number): string => `${value.toFixed(1)} ms`;

beforeAll(async () => {
  const dir = tempDir();
  const started = performance.now();
  const generated = await generateChat(join(dir, "chat.jsonl"), TURNS, DELTAS);
  const generatedIn = performance.now() - started;
  importJsonl(join(dir, "store.redb"), join(dir, "chat.jsonl"));
  const importedIn = performance.now() - started - generatedIn;
  session = generated.session;
  len = generated.events;
  figures.push(["session", `${len} events (${TURNS} chat turns of ${DELTAS} text deltas), binary ${binary()}`]);
  figures.push(["generate + import", `${ms(generatedIn)} + ${ms(importedIn)}`]);
  figures.push(["machine", `${cpus().length} CPUs, load average ${loadavg().map((l) => l.toFixed(1)).join(" ")} at the start`]);
  server = await serve({ dir });
  browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium", headless: true, args: ["--no-sandbox"] });
}, 600_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  console.log("\ninspector benchmark\n" + figures.map(([k, v]) => `  ${k.padEnd(34)} ${v}`).join("\n") + "\n");
});

/** Records, in the page, keydown → the frame after the view of the new position is complete. */
async function instrument(page: Page): Promise<void> {
  await page.evaluate(() => {
    const w = window as unknown as { latencies: number[]; pending: number | null; waited: number };
    w.latencies = [];
    w.pending = null;
    w.waited = 0;
    document.addEventListener("keydown", () => (w.pending = performance.now()), { capture: true });
    new MutationObserver(() => {
      const body = document.body;
      // The page marks a step that has to wait for a states request.
      if (w.pending !== null && body.dataset.loading === "state") w.waited++;
      if (w.pending === null || body.dataset.view !== body.dataset.position) return;
      const t0 = w.pending;
      w.pending = null;
      // After the frame that paints it.
      requestAnimationFrame(() => setTimeout(() => w.latencies.push(performance.now() - t0), 0));
    }).observe(document.body, { attributes: true, attributeFilter: ["data-view", "data-position", "data-loading"] });
  });
}

async function steps(page: Page, key: string, count: number): Promise<{ latencies: number[]; waited: number }> {
  await page.evaluate(() => {
    const w = window as unknown as { latencies: number[]; waited: number };
    w.latencies = [];
    w.waited = 0;
  });
  for (let i = 0; i < count; i++) {
    await page.keyboard.press(key);
    await page.waitForFunction((n) => (window as unknown as { latencies: number[] }).latencies.length >= n, i + 1, { polling: "raf" });
  }
  return page.evaluate(() => {
    const w = window as unknown as { latencies: number[]; waited: number };
    return { latencies: w.latencies, waited: w.waited };
  });
}

function stepFigures(name: string, run: { latencies: number[]; waited: number }, goal = ""): void {
  const s = stats(run.latencies);
  figures.push([name, `p50 ${ms(s.p50)}, p95 ${ms(s.p95)}, max ${ms(s.max)}; ${run.waited} of ${run.latencies.length} waited for the server${goal}`]);
}

test("first screen of a 100,000-event session", async () => {
  const screens: number[] = [];
  const complete: number[] = [];
  for (let run = 0; run < 5; run++) {
    const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    await page.goto(`${server.url}/#session=${session}`, { waitUntil: "commit" });
    // The timeline rows around the cursor and the event at the cursor are in the page.
    const screen = await page.waitForFunction(
      (n) => document.querySelector(".row.cursor .name")?.textContent === "workflow:completed" && document.getElementById("event")?.dataset.position === String(n) ? performance.now() : false,
      len,
      { polling: "raf", timeout: 60_000 },
    );
    screens.push((await screen.jsonValue()) as number);
    const view = await page.waitForFunction((n) => (document.body.dataset.view === String(n) ? performance.now() : false), len, { polling: "raf", timeout: 60_000 });
    complete.push((await view.jsonValue()) as number);
    await page.close();
  }
  const s = stats(screens);
  const c = stats(complete);
  figures.push(["timeline + event at the cursor", `median ${ms(s.p50)}, max ${ms(s.max)}`]);
  figures.push(["first screen (… + state tree and patch)", `median ${ms(c.p50)}, max ${ms(c.max)} (goal ≤ 1000 ms)`]);
  expect(screens).toHaveLength(5);
});

test("keyboard step latency at 100,000 events", async () => {
  const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  await page.goto(`${server.url}/#session=${session}`);
  await page.waitForFunction((n) => document.body.dataset.view === String(n), len, { timeout: 60_000 });
  await instrument(page);
  const back = await steps(page, "k", 300);
  stepFigures("step back from the end (k ×300)", back, " (goal p95 ≤ 50 ms)");
  // From the middle: a position never read before.
  const middle = Math.floor(len / 2);
  await page.keyboard.press("g");
  await page.keyboard.type(String(middle));
  await page.keyboard.press("Enter");
  await page.waitForFunction((n) => document.body.dataset.view === String(n), middle, { timeout: 60_000 });
  const forward = await steps(page, "j", 300);
  stepFigures("step forward mid-session (j ×300)", forward);
  // The compact view (one row per agent call), once the whole session has been read.
  await page.waitForFunction(() => !document.getElementById("meta")?.textContent?.includes("reading"), undefined, { timeout: 120_000 });
  await page.keyboard.press("x");
  const compact = await steps(page, "j", 200);
  stepFigures("compact view step (j ×200)", compact);
  await page.keyboard.press("x");
  // Goto far positions never read: the state must come from the server.
  const gotos: number[] = [];
  for (const target of [12_345, 87_654, 33_333, 66_666, 5_000]) {
    const t0 = performance.now();
    await page.keyboard.press("g");
    await page.keyboard.type(String(target));
    await page.keyboard.press("Enter");
    await page.waitForFunction((n) => document.body.dataset.view === String(n), target, { timeout: 60_000, polling: "raf" });
    gotos.push(performance.now() - t0);
  }
  const g = stats(gotos);
  figures.push(["goto an unread position (×5)", `median ${ms(g.p50)}, max ${ms(g.max)} (includes typing)`]);
  await page.close();
  expect(back.latencies).toHaveLength(300);
});
