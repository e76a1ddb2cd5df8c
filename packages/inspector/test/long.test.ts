// A long session in Debian's chromium against a real `openharness serve`: a chat session of
// 100,000 events imported (test/long.ts), and a 10,000-event session with a fork whose own
// events repeat it until near the end. The goals: the first screen of the long session (its end:
// rows, event, patch and state) in ≤ 1 s; a step (full and compact view) in ≤ 50 ms p95; the
// fork-versus-parent view of the two 10,000-event sessions in ≤ 1 s. The figures are printed;
// the goals are asserted against an optimized server (target/release/openharness when it
// embeds the current page, or $OPENHARNESS_BIN), not a debug build.

import { join } from "node:path";
import { type Browser, type Page, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { TURN, generateLong } from "./long";
import { type Served, importJsonl, serveForScale, tempDir } from "./serve";

const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
const LONG_TURNS = 2_000;
const FORKED_TURNS = 200;

let server: Served;
let browser: Browser;
let optimized = false;
let long: { parent: string; len: number };
let forked: { parent: string; fork: string; len: number };

async function newPage(view: "full" | "compact"): Promise<{ page: Page; problems: string[] }> {
  const page = await browser.newPage({ viewport: { width: 1440, height: 860 } });
  const problems: string[] = [];
  page.on("pageerror", (error) => problems.push(error.message));
  page.on("response", (response) => {
    if (response.status() >= 400) problems.push(`${response.status()} ${response.request().method()} ${response.url()}`);
  });
  await page.addInitScript((v) => localStorage.setItem("openharness.inspector.view", v), view);
  return { page, problems };
}

function p95(times: number[]): number {
  const sorted = [...times].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.95))]!;
}

/** Presses `key` `count` times, each once the last step is on screen; the time of each step. */
async function steps(page: Page, key: string, count: number): Promise<number[]> {
  return page.evaluate(
    async ({ key, count }) => {
      const times: number[] = [];
      const body = document.body;
      for (let i = 0; i < count; i++) {
        const before = body.dataset.view;
        const start = performance.now();
        document.dispatchEvent(new KeyboardEvent("keydown", { key, bubbles: true }));
        await new Promise<void>((resolve) => {
          const done = (): boolean => body.dataset.view !== before && body.dataset.view === body.dataset.position && body.dataset.loading === undefined;
          if (done()) return resolve();
          const observer = new MutationObserver(() => {
            if (done()) {
              observer.disconnect();
              resolve();
            }
          });
          observer.observe(body, { attributes: true });
        });
        times.push(performance.now() - start);
      }
      return times;
    },
    { key, count },
  );
}

beforeAll(async () => {
  const dir = tempDir();
  ({ server, optimized } = await serveForScale(dir, async (bin) => {
    const started = performance.now();
    const longFile = join(dir, "long.jsonl");
    const generated = await generateLong(longFile, LONG_TURNS);
    long = { parent: generated.parent, len: generated.len };
    const forkFile = join(dir, "forked.jsonl");
    const pair = await generateLong(forkFile, FORKED_TURNS, { fork: { differsAt: FORKED_TURNS - 10 }, seed: 0x1b873593 });
    forked = { parent: pair.parent, fork: pair.fork!, len: pair.len };
    importJsonl(join(dir, "store.redb"), longFile, bin);
    importJsonl(join(dir, "store.redb"), forkFile, bin);
    console.log(`store: ${long.len} + ${forked.len} events and a fork generated and imported in ${Math.round(performance.now() - started)} ms`);
  }));
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox"] });
}, 600_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

describe("a 100,000-event session", () => {
  test("its first screen (rows, event, patch and state at its end) in ≤ 1 s", async () => {
    expect(long.len).toBe(LONG_TURNS * TURN);
    const { page, problems } = await newPage("compact");
    await page.goto(`${server.url}/#session=${long.parent}`);
    await page.waitForFunction(() => performance.getEntriesByName("session-shown").length > 0, undefined, { timeout: 30_000 });
    const shown = await page.evaluate(() => performance.getEntriesByName("session-shown")[0]!.startTime);
    console.log(`100,000 events: first screen (navigation start to the end's state on screen) ${shown.toFixed(0)} ms`);
    expect(await page.evaluate(() => document.body.dataset.view)).toBe(String(long.len));
    expect(await page.locator(".row.cursor .name").textContent()).toBe("workflow:completed");
    await expect.poll(() => page.locator("#state").innerText()).toContain(`exchanges: [${LONG_TURNS}]`);
    if (optimized) expect(shown).toBeLessThanOrEqual(1000);
    expect(problems).toEqual([]);
    await page.close();
  });

  for (const view of ["full", "compact"] as const) {
    test(`a step back in the ${view} view in ≤ 50 ms p95`, async () => {
      const { page, problems } = await newPage(view);
      await page.goto(`${server.url}/#session=${long.parent}`);
      await page.waitForFunction((len) => document.body.dataset.view === String(len), long.len, { timeout: 30_000 });
      const back = await steps(page, "k", 200);
      const forward = await steps(page, "j", 100);
      const all = [...back, ...forward];
      console.log(`100,000 events, ${view} view: ${all.length} steps, p50 ${[...all].sort((a, b) => a - b)[all.length >> 1]!.toFixed(1)} ms, p95 ${p95(all).toFixed(1)} ms, max ${Math.max(...all).toFixed(1)} ms`);
      if (optimized) expect(p95(all)).toBeLessThanOrEqual(50);
      expect(problems).toEqual([]);
      await page.close();
    }, 120_000);
  }
});

describe("two 10,000-event sessions, a fork and its parent", () => {
  test("the fork-versus-parent view in ≤ 1 s", async () => {
    const { page, problems } = await newPage("compact");
    await page.goto(`${server.url}/#session=${forked.fork}`);
    await page.waitForFunction(() => performance.getEntriesByName("session-shown").length > 0, undefined, { timeout: 30_000 });
    const ms = await page.evaluate(async () => {
      const box = document.getElementById("compare")!;
      const start = performance.now();
      document.querySelector<HTMLElement>('.tab[data-tab="compare"]')!.click();
      await new Promise<void>((resolve) => {
        if (box.dataset.state === "shown") return resolve();
        const observer = new MutationObserver(() => {
          if (box.dataset.state === "shown") {
            observer.disconnect();
            resolve();
          }
        });
        observer.observe(box, { attributes: true });
      });
      return performance.now() - start;
    });
    console.log(`fork versus parent, 10,000 events each: compared and shown in ${ms.toFixed(0)} ms`);
    const verdict = await page.locator("#compare .compare-verdict").textContent();
    // They agree up to the differing turn's input: 10 turns before the end, 2 events into it.
    const agree = (FORKED_TURNS - 10) * TURN + 1;
    expect(verdict).toBe(`${agree} events agree; they part at position ${agree + 1} (counted from the root).`);
    expect(await page.locator("#compare").innerText()).toContain(`another question ${FORKED_TURNS - 10}`);
    if (optimized) expect(ms).toBeLessThanOrEqual(1000);
    expect(problems).toEqual([]);
    await page.close();
  }, 120_000);
});
