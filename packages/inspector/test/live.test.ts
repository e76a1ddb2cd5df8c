// Live follow over many turns, in Debian's chromium against a real `openharness serve`: a
// page follows a chat session while another client sends it 50 inputs one after another; after
// every turn the page's cursor must reach the session's new end (its state shown there) within
// 3 s. A turn it does not catch up with is a stall; the goal is none.

import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import type { SessionDetail } from "@openharness/client";
import { type Served, api, idle, serve } from "./serve";

const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
const TURNS = 50;
/** How long the page may take to show a turn's end before it counts as a stall. */
const STALL_MS = 3000;

let server: Served;
let browser: Browser;

beforeAll(async () => {
  server = await serve();
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox"] });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

const settled = (session: string): Promise<SessionDetail> => idle<SessionDetail>(server.url, session);

test(`follows ${TURNS} turns sent by another client without a stall`, async () => {
  const { session } = await api<{ session: string }>(server.url, "sessions", { method: "POST", body: { workflow: "chat", input: "turn 0" } });
  let summary = await settled(session);
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const problems: string[] = [];
  page.on("pageerror", (error) => problems.push(error.message));
  await page.goto(`${server.url}/#session=${session}`);
  await page.waitForFunction((len) => document.body.dataset.view === String(len), summary.len);
  await page.keyboard.press("l");
  await page.waitForFunction(() => document.body.dataset.live === "live");

  const lags: number[] = [];
  const stalls: number[] = [];
  for (let turn = 1; turn <= TURNS; turn++) {
    await api(server.url, `sessions/${session}/input`, { method: "POST", body: { text: `turn ${turn}` } });
    summary = await settled(session);
    const ended = Date.now();
    try {
      // The cursor at the new end, and the state there on screen.
      await page.waitForFunction(
        (len) => document.body.dataset.position === String(len) && document.body.dataset.view === String(len),
        summary.len,
        { timeout: STALL_MS, polling: 10 },
      );
      lags.push(Date.now() - ended);
    } catch {
      stalls.push(turn);
    }
  }
  lags.sort((a, b) => a - b);
  const p95 = lags[Math.floor(lags.length * 0.95)] ?? 0;
  console.log(`live follow: ${TURNS} turns, ${stalls.length} stalls, catch-up after a turn's end p50 ${lags[lags.length >> 1]} ms, p95 ${p95} ms`);
  expect(stalls, `turns the page did not catch up with within ${STALL_MS} ms`).toEqual([]);
  // Still following, still live, and the state is the last turn's.
  expect(await page.locator("#follow").getAttribute("class")).toContain("on");
  expect(await page.evaluate(() => document.body.dataset.live)).toBe("live");
  await expect.poll(() => page.locator("#state").innerText()).toContain(`exchanges: [${TURNS + 1}]`);
  expect(problems).toEqual([]);
  await page.close();
}, 240_000);
