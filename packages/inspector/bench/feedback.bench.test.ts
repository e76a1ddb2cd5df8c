// The session list over 10,000 annotated sessions, in headless Debian chromium against a real
// `openharness serve`: the same 10,000 generated sessions (test/many.ts) imported into two
// stores, one bare and one where each session has a person's annotation and an online score
// on its feedback log (`feedback:<id>`, 20,000 logs in all), both served at once and measured
// in turns, in the same run:
//   - first screen of the list: navigation start → the first 100 rows in the page (the page's
//     `sessions-listed` mark), the first load after the server started (its catalog cold) and
//     9 more, per store;
//   - `GET /sessions?limit=100` on the server alone, per store, and with a scorer's filter and
//     sort and the annotation queue's `annotated=false` on the annotated store;
//   - sorting the annotated store's list by score from the page: the sort select changed →
//     the rows updated, alternating the highest and the lowest first;
//   - the first screen again after 1,000 more annotations posted through the API while it
//     serves (`POST /sessions/{id}/annotations`, 16 at a time).
// Goal (issue 59): annotating 10,000 sessions keeps the list's first screen ≤ 1 s. Prints a
// table; writes nothing. Set OPENHARNESS_BIN to a release build for figures comparable to a
// deployment.

import { cpus, loadavg } from "node:os";
import { join } from "node:path";
import { type Browser, type Page, chromium } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import type { SessionsPage } from "@openharness/client";
import { generateSessions } from "../test/many";
import { type Served, binary, importJsonl, serve, tempDir } from "../test/serve";

const MANY = Number(process.env.BENCH_SESSIONS ?? 10_000);
const LOADS = 10;
const POSTED = 1000;

let bare: Served;
let annotated: Served;
let ids: string[];
let browser: Browser;
const figures: [string, string][] = [];

function stats(samples: number[]): { p50: number; p95: number; max: number } {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  return { p50: at(0.5), p95: at(0.95), max: sorted[sorted.length - 1]! };
}

const ms = (value: number): string => `${value.toFixed(0)} ms`;

/** Session i's feedback: a quality score, and an annotation by one of five reviewers. */
function said(i: number) {
  const labels = i % 4 === 0 ? ["wrong-city"] : i % 9 === 0 ? ["hallucination", "rude"] : [];
  return {
    scores: { quality: ((i * 7919) % 1000) / 1000 },
    annotation: { by: `reviewer-${i % 5}@example.com`, thumbs: i % 3 === 0 ? ("down" as const) : ("up" as const), ...(labels.length > 0 ? { labels } : {}), ...(i % 6 === 0 ? { note: `checked session ${i}` } : {}) },
  };
}

beforeAll(async () => {
  const bin = binary();
  const started = performance.now();
  const [bareDir, annotatedDir] = [tempDir(), tempDir()];
  ids = await generateSessions(join(bareDir, "many.jsonl"), MANY);
  const annotatedIds = await generateSessions(join(annotatedDir, "many.jsonl"), MANY, said);
  expect(annotatedIds).toEqual(ids);
  const generatedIn = performance.now() - started;
  importJsonl(join(bareDir, "store.redb"), join(bareDir, "many.jsonl"), bin);
  const bareIn = performance.now() - started - generatedIn;
  importJsonl(join(annotatedDir, "store.redb"), join(annotatedDir, "many.jsonl"), bin);
  const annotatedIn = performance.now() - started - generatedIn - bareIn;
  figures.push(["stores", `${MANY} sessions; the annotated store adds ${MANY} feedback logs (an annotation and a score each); binary ${bin}`]);
  figures.push(["generate; import bare, annotated", `${ms(generatedIn)}; ${ms(bareIn)}, ${ms(annotatedIn)}`]);
  figures.push(["machine", `${cpus().length} CPUs, load average ${loadavg().map((l) => l.toFixed(1)).join(" ")} at the start`]);
  if (process.env.INSPECTOR_PAGE === "checkout") figures.push(["page", "the checked-in build, through test/serve.ts's proxy (INSPECTOR_PAGE=checkout)"]);
  [bare, annotated] = await Promise.all([serve({ dir: bareDir, bin }), serve({ dir: annotatedDir, bin })]);
  browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium", headless: true, args: ["--no-sandbox"] });
}, 900_000);

afterAll(async () => {
  await browser?.close();
  await bare?.stop();
  await annotated?.stop();
  console.log("\nsession list benchmark: 10,000 annotated sessions\n" + figures.map(([k, v]) => `  ${k.padEnd(44)} ${v}`).join("\n") + "\n");
});

/** Navigation start → the first 100 rows in the page; checks they carry what the store holds. */
async function firstScreen(server: Served, withFeedback: boolean): Promise<number> {
  const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  await page.goto(`${server.url}/`, { waitUntil: "commit" });
  await page.waitForFunction(() => performance.getEntriesByName("sessions-listed").length > 0, undefined, { timeout: 60_000, polling: "raf" });
  const first = await page.evaluate(() => performance.getEntriesByName("sessions-listed")[0]!.startTime);
  expect(await page.locator("li.session").count()).toBe(100);
  expect(await page.locator("li.session .annotations").count()).toBe(withFeedback ? 100 : 0);
  expect(await page.locator("li.session .score").count()).toBe(withFeedback ? 100 : 0);
  await page.close();
  return first;
}

async function timed(url: string, times: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < times; i++) {
    const t0 = performance.now();
    const response = await fetch(url);
    const page = (await response.json()) as SessionsPage;
    out.push(performance.now() - t0);
    expect(response.ok).toBe(true);
    expect(page.sessions.length).toBeGreaterThan(0);
  }
  return out;
}

function screenFigures(name: string, samples: number[], goal = ""): void {
  const s = stats(samples);
  figures.push([name, `median ${ms(s.p50)}, max ${ms(s.max)} (${samples.length} loads)${goal}`]);
}

test("first screen of the list: bare and annotated stores, in turns", async () => {
  const cold = { bare: await firstScreen(bare, false), annotated: await firstScreen(annotated, true) };
  figures.push(["first screen, cold (first load after start)", `bare ${ms(cold.bare)}, annotated ${ms(cold.annotated)}`]);
  const warm = { bare: [] as number[], annotated: [] as number[] };
  for (let i = 0; i < LOADS - 1; i++) {
    warm.bare.push(await firstScreen(bare, false));
    warm.annotated.push(await firstScreen(annotated, true));
  }
  screenFigures("first screen, bare store", warm.bare);
  screenFigures("first screen, annotated store", warm.annotated, " (goal ≤ 1000 ms)");
});

test("the list on the server alone: GET /sessions", async () => {
  const page = "sessions?limit=100";
  for (const [name, url] of [
    ["bare: ?limit=100", `${bare.url}/${page}`],
    ["annotated: ?limit=100", `${annotated.url}/${page}`],
    ["annotated: ?scorer=quality&sort=lowestScore", `${annotated.url}/${page}&scorer=quality&sort=lowestScore`],
    ["annotated: ?scorer=quality&minScore=0.9", `${annotated.url}/${page}&scorer=quality&minScore=0.9`],
    ["annotated: ?label=wrong-city", `${annotated.url}/${page}&label=wrong-city`],
  ] as const) {
    const s = stats(await timed(url, 20));
    figures.push([`GET /sessions, ${name}`, `p50 ${ms(s.p50)}, p95 ${ms(s.p95)}`]);
  }
  const queue = (await (await fetch(`${annotated.url}/${page}&annotated=false`)).json()) as SessionsPage;
  expect(queue.total).toBe(0);
});

test("sorting the annotated list by score from the page", async () => {
  const page: Page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  await page.goto(`${annotated.url}/`);
  await page.waitForFunction(() => document.body.dataset.list === "ready", undefined, { timeout: 60_000 });
  await page.locator("#session-scorer").fill("quality");
  await page.locator("#session-scorer").press("Enter");
  await page.waitForFunction(() => document.body.dataset.list === "ready" && document.getElementById("session-list")!.dataset.filter === "scorer=quality", undefined, { timeout: 60_000 });
  const times: number[] = [];
  for (let i = 0; i < 10; i++) {
    const sort = i % 2 === 0 ? "lowestScore" : "score";
    const t0 = performance.now();
    await page.locator("#session-sort").selectOption(sort);
    await page.waitForFunction((f) => document.body.dataset.list === "ready" && document.getElementById("session-list")!.dataset.filter === f, `sort=${sort}&scorer=quality`, {
      timeout: 60_000,
      polling: "raf",
    });
    times.push(performance.now() - t0);
    const values = await page.locator('li.session .score[data-scorer="quality"]').evaluateAll((s) => s.map((x) => Number((x as HTMLElement).dataset.value)));
    expect(values).toEqual([...values].sort((a, b) => (sort === "score" ? b - a : a - b)));
  }
  const s = stats(times);
  figures.push(["sort by score (select → rows updated, ×10)", `p50 ${ms(s.p50)}, p95 ${ms(s.p95)}`]);
  await page.close();
});

test("first screen after 1,000 annotations posted while serving", async () => {
  const t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < POSTED) {
        const session = ids[(next++ * 37) % ids.length]!;
        const response = await fetch(`${annotated.url}/sessions/${session}/annotations`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ by: "bench@example.com", thumbs: "down", labels: ["benched"] }),
        });
        expect(response.status).toBe(201);
      }
    }),
  );
  const postedIn = performance.now() - t0;
  figures.push(["1,000 annotations posted (16 at a time)", `${ms(postedIn)} (${((POSTED / postedIn) * 1000).toFixed(0)} a second)`]);
  const loads: number[] = [];
  for (let i = 0; i < 5; i++) loads.push(await firstScreen(annotated, true));
  figures.push(["first screen, cold after the posts", ms(loads[0]!)]);
  screenFigures("first screen after the posts", loads.slice(1), " (goal ≤ 1000 ms)");
  const labelled = (await (await fetch(`${annotated.url}/sessions?label=benched&limit=1`)).json()) as SessionsPage;
  expect(labelled.total).toBe(POSTED);
});
