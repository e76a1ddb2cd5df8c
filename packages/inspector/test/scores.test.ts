// Online scores and people's annotations in Debian's chromium against a real `openharness serve
// --online-scorers`: twelve sessions imported with a `quality` score each (two of them
// annotated), and chats recorded through the API that the server scores online (`polite`: the
// first input says "please"). The list shows each row's scores and thumbs, sorts by a scorer's
// score (the worst first, the best first) and filters by its bounds, by annotated or not and by
// label; the open session is annotated from the page (a thumb, labels, a note, its turn; who is
// asked once) and the server records it; the review queue walks the sessions nobody annotated
// yet, the worst first, and its count drops as they are annotated.

import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Browser, type Page, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { Feedback, SessionDetail, SessionsPage } from "@openharness/client";
import { generateSessions } from "./many";
import { type Served, api, idle, importJsonl, screenshotsDir, serve, tempDir, until } from "./serve";

const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
/** Session i's quality: a permutation of 0, 1/11, …, 1 (two decimals). */
const QUALITY = Array.from({ length: 12 }, (_, i) => Number((((i * 5) % 12) / 11).toFixed(2)));
/** The imported sessions someone annotated (thumbs up, label `imported`). */
const ANNOTATED = [3, 8];
const REVIEWER = "ana@example.com";

let server: Served;
let browser: Browser;
let imported: string[];
/** A chat whose first input says please (polite 1), and one that does not (polite 0). */
let polite: string;
let rude: string;

async function record(input: string): Promise<string> {
  const { session } = await api<{ session: string }>(server.url, "sessions", { method: "POST", body: { workflow: "chat", input } });
  await idle(server.url, session);
  // Scored a moment after its turn ended.
  await until(`${session}'s online score`, async () => (await api<SessionDetail>(server.url, `sessions/${session}`)).scores?.polite !== undefined);
  return session;
}

async function newPage(): Promise<Page & { problems: string[] }> {
  const page = (await browser.newPage({ viewport: { width: 1440, height: 860 } })) as Page & { problems: string[] };
  page.problems = [];
  page.on("pageerror", (error) => page.problems.push(error.message));
  page.on("response", (response) => {
    if (response.status() >= 400) page.problems.push(`${response.status()} ${response.request().method()} ${response.url()}`);
  });
  return page;
}

/** Waits until the list shows the server's answer for the filter `filter` (as address parameters). */
async function answered(page: Page, filter: string): Promise<void> {
  await page.waitForFunction(
    (f) => document.body.dataset.list === "ready" && document.getElementById("session-list")!.dataset.filter === f,
    filter,
  );
}

const rows = (page: Page): Promise<string[]> =>
  page.locator("li.session").evaluateAll((items) => items.map((li) => (li as HTMLElement).dataset.session!));

const values = (page: Page, scorer: string): Promise<number[]> =>
  page.locator(`li.session .score[data-scorer="${scorer}"]`).evaluateAll((items) => items.map((s) => Number((s as HTMLElement).dataset.value)));

/** Waits until `session` is open with its feedback read. */
async function opened(page: Page, session: string): Promise<void> {
  await page.waitForFunction(
    (id) => {
      const list = document.getElementById("feedback-list")!;
      return document.body.dataset.position !== undefined && list.dataset.session === id && list.dataset.state === "shown";
    },
    session,
    { timeout: 10_000 },
  );
}

const feedbackOf = (session: string): Promise<Feedback> => api<Feedback>(server.url, `sessions/${session}/feedback`);

beforeAll(async () => {
  const dir = tempDir();
  const file = join(dir, "scored.jsonl");
  imported = await generateSessions(file, QUALITY.length, (i) => ({
    scores: { quality: QUALITY[i]! },
    ...(ANNOTATED.includes(i) ? { annotation: { by: "imported", thumbs: "up" as const, labels: ["imported"] } } : {}),
  }));
  importJsonl(join(dir, "store.redb"), file);
  const scorers = join(dir, "scorers.toml");
  writeFileSync(
    scorers,
    `[[workflow]]
name = "chat"

[[workflow.scorer]]
kind = "contains"
name = "polite"
field = { state = "/exchanges/0/user" }
expect = "please"
`,
  );
  server = await serve({ dir, args: ["--online-scorers", scorers] });
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox"] });
  polite = await record("Could you please plan a day in Reykjavik?");
  rude = await record("Plan a day in Zanzibar.");
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

describe("the session list by score and annotation", () => {
  test("each row says its online scores and what people said of it", async () => {
    const page = await newPage();
    await page.goto(`${server.url}/`);
    await answered(page, "");
    expect(await page.locator(`li.session[data-session="${polite}"] .score`).allTextContents()).toEqual(["polite 1"]);
    expect(await page.locator(`li.session[data-session="${rude}"] .score`).allTextContents()).toEqual(["polite 0"]);
    const annotated = page.locator(`li.session[data-session="${imported[3]}"]`);
    expect(await annotated.locator(".score").allTextContents()).toEqual([`quality ${QUALITY[3]}`]);
    expect(await annotated.locator(".annotations .thumbs").textContent()).toBe("👍 1");
    expect(await annotated.locator(".annotations .label").allTextContents()).toEqual(["imported"]);
    expect(await page.locator(`li.session[data-session="${imported[4]}"] .annotations`).count()).toBe(0);
    // The scorers and labels seen are offered; the score sorts wait for a scorer.
    expect(await page.locator("#session-scorers option").evaluateAll((o) => o.map((x) => (x as HTMLOptionElement).value))).toEqual(["polite", "quality"]);
    expect(await page.locator("#session-labels option").evaluateAll((o) => o.map((x) => (x as HTMLOptionElement).value))).toEqual(["imported"]);
    expect(await page.locator('#session-sort option[value="lowestScore"]').isDisabled()).toBe(true);
    expect(await page.locator("#session-min-score").isDisabled()).toBe(true);
    expect(page.problems).toEqual([]);
    await page.close();
  });

  test("sorted by a scorer's lowest score the worst come first, by its score the best; its bounds hide the others", async () => {
    const page = await newPage();
    await page.goto(`${server.url}/`);
    await answered(page, "");
    await page.locator("#session-scorer").fill("quality");
    await page.locator("#session-scorer").press("Enter");
    await answered(page, "scorer=quality");
    // Only the sessions it scored.
    expect(new Set(await rows(page))).toEqual(new Set(imported));
    await page.locator("#session-sort").selectOption("lowestScore");
    await answered(page, "sort=lowestScore&scorer=quality");
    const ascending = [...QUALITY].sort((a, b) => a - b);
    expect(await values(page, "quality")).toEqual(ascending);
    expect((await rows(page))[0]).toBe(imported[QUALITY.indexOf(0)]);
    await page.locator("#session-sort").selectOption("score");
    await answered(page, "sort=score&scorer=quality");
    expect(await values(page, "quality")).toEqual([...ascending].reverse());
    expect((await rows(page))[0]).toBe(imported[QUALITY.indexOf(1)]);
    // At least 0.5: the others are gone, here as on the server.
    await page.locator("#session-min-score").fill("0.5");
    await page.locator("#session-min-score").press("Enter");
    await answered(page, "sort=score&scorer=quality&minScore=0.5");
    const high = QUALITY.filter((q) => q >= 0.5).sort((a, b) => b - a);
    expect(await values(page, "quality")).toEqual(high);
    expect(await page.locator("#session-count").textContent()).toBe(`${high.length} of ${high.length} sessions`);
    const page2 = await api<SessionsPage>(server.url, "sessions?scorer=quality&minScore=0.5&sort=score");
    expect(await rows(page)).toEqual(page2.sessions.map((s) => s.id));
    await page.locator("#session-max-score").fill("0.8");
    await page.locator("#session-max-score").press("Enter");
    await answered(page, "sort=score&scorer=quality&minScore=0.5&maxScore=0.8");
    expect(await values(page, "quality")).toEqual(high.filter((q) => q <= 0.8));
    // The online scorer's scores sort the same way: the impolite chat first.
    await page.locator("#session-scorer").fill("polite");
    await page.locator("#session-min-score").fill("");
    await page.locator("#session-max-score").fill("");
    await page.locator("#session-scorer").press("Enter");
    await page.locator("#session-sort").selectOption("lowestScore");
    await answered(page, "sort=lowestScore&scorer=polite");
    expect(await rows(page)).toEqual([rude, polite]);
    // Without a scorer, no score sort: the list is back to the most recently active first.
    await page.locator("#session-scorer").fill("");
    await page.locator("#session-scorer").press("Enter");
    await answered(page, "");
    expect(await page.locator("#session-sort").inputValue()).toBe("recent");
    expect(await page.locator("li.session").count()).toBe(QUALITY.length + 2);
    expect(page.problems).toEqual([]);
    await page.close();
  });
});

describe("annotating", () => {
  test("a thumb, labels and a note on the turn at the cursor, saved from the page, are recorded with who (asked once) and when", async () => {
    const page = await newPage();
    const before = await api<SessionDetail>(server.url, `sessions/${rude}`);
    await page.goto(`${server.url}/#session=${rude}`);
    await opened(page, rude);
    expect(await page.locator("#feedback-list .turn-scores .score").allTextContents()).toEqual(["polite 0"]);
    await page.locator("#thumb-down").click();
    await page.locator("#annotate-labels").fill("wrong-city, rude , wrong-city");
    await page.locator("#annotate-note").fill("Asked for Zanzibar,\nanswered something else.");
    expect(await page.locator('#annotate-scope option[value="turn"]').textContent()).toBe(`this turn (ends at ${before.len})`);
    await page.locator("#annotate-scope").selectOption("turn");
    await page.locator("#annotate-save").click();
    // Who: asked the first time.
    await expect.poll(() => page.locator("#who-dialog").evaluate((d) => (d as HTMLDialogElement).open)).toBe(true);
    await page.locator("#who").fill(REVIEWER);
    await page.locator("#who").press("Enter");
    const recorded = await until("the annotation", async () => {
      const feedback = await feedbackOf(rude);
      return feedback.annotations.length === 1 ? feedback.annotations[0] : undefined;
    });
    expect(recorded).toMatchObject({ by: REVIEWER, thumbs: "down", labels: ["wrong-city", "rude"], note: "Asked for Zanzibar,\nanswered something else.", turn: before.len });
    expect(Date.now() - Date.parse(recorded!.at)).toBeLessThan(60_000);
    // The panel lists it, the form is fresh, the row says it.
    await expect.poll(() => page.locator(`#feedback-list .annotation[data-id="${recorded!.id}"] .by`).textContent()).toBe(REVIEWER);
    expect(await page.locator(`#feedback-list .annotation[data-id="${recorded!.id}"] .label`).allTextContents()).toEqual(["wrong-city", "rude"]);
    expect(await page.locator("#annotate-note").inputValue()).toBe("");
    expect(await page.locator("#thumb-down").getAttribute("aria-pressed")).toBe("false");
    const row = page.locator(`li.session[data-session="${rude}"]`);
    await expect.poll(() => row.locator(".annotations .thumbs").textContent()).toBe("👎 1");
    mkdirSync(screenshotsDir, { recursive: true });
    await page.screenshot({ path: join(screenshotsDir, "feedback.png") });
    // A second one, on the whole session: not asked again; the reviewer's latest thumb counts.
    await page.locator("#thumb-up").click();
    await page.locator("#annotate-scope").selectOption("session");
    await page.locator("#annotate-save").click();
    await until("the second annotation", async () => (await feedbackOf(rude)).annotations.length === 2);
    expect((await feedbackOf(rude)).annotations[1]).toMatchObject({ by: REVIEWER, thumbs: "up" });
    expect((await feedbackOf(rude)).annotations[1]).not.toHaveProperty("turn");
    expect(await page.locator("#who-dialog").evaluate((d) => (d as HTMLDialogElement).open)).toBe(false);
    await expect.poll(() => row.locator(".annotations .thumbs").textContent()).toBe("👍 1");
    // Kept in this browser.
    await page.reload();
    await opened(page, rude);
    expect(await page.locator("#annotate-who").textContent()).toBe(REVIEWER);
    expect(await page.locator("#feedback-list .annotation").count()).toBe(2);
    // Nothing said: refused in the page, nothing sent.
    await page.locator("#annotate-save").click();
    await expect.poll(() => page.locator("#annotate-error").textContent()).toBe("give a thumb, a label or a note");
    expect((await feedbackOf(rude)).annotations).toHaveLength(2);
    expect(page.problems).toEqual([]);
    await page.close();
  });

  test("the annotated and label filters", async () => {
    const page = await newPage();
    await page.goto(`${server.url}/`);
    await answered(page, "");
    const annotated = new Set([...ANNOTATED.map((i) => imported[i]!), rude]);
    await page.locator("#session-annotated").selectOption("yes");
    await answered(page, "annotated=yes");
    expect(new Set(await rows(page))).toEqual(annotated);
    await page.locator("#session-annotated").selectOption("no");
    await answered(page, "annotated=no");
    const unannotated = await rows(page);
    expect(unannotated).toHaveLength(QUALITY.length + 2 - annotated.size);
    expect(unannotated.filter((id) => annotated.has(id))).toEqual([]);
    await page.locator("#session-annotated").selectOption("");
    await page.locator("#session-label").fill("rude");
    await page.locator("#session-label").press("Enter");
    await answered(page, "label=rude");
    expect(await rows(page)).toEqual([rude]);
    await page.locator("#session-label").fill("imported");
    await page.locator("#session-label").press("Enter");
    await answered(page, "label=imported");
    expect(new Set(await rows(page))).toEqual(new Set(ANNOTATED.map((i) => imported[i]!)));
    expect(page.problems).toEqual([]);
    await page.close();
  });
});

describe("the review queue", () => {
  test("walks the sessions nobody annotated, the worst first: Save & next records and moves on, the count drops; Skip moves on", async () => {
    const page = await newPage();
    await page.addInitScript((name) => localStorage.setItem("openharness.inspector.reviewer", name), REVIEWER);
    const queue = await api<SessionsPage>(server.url, "sessions?scorer=quality&sort=lowestScore&annotated=false&limit=1000");
    const ids = queue.sessions.map((s) => s.id);
    expect(ids).toHaveLength(QUALITY.length - ANNOTATED.length);
    await page.goto(`${server.url}/#queue&scorer=quality&sort=lowestScore`);
    await opened(page, ids[0]!);
    await answered(page, "sort=lowestScore&scorer=quality&annotated=no");
    expect(await page.locator("li.session.selected").getAttribute("data-session")).toBe(ids[0]);
    expect(await page.locator("#queue-count").textContent()).toBe(`${ids.length} to review`);
    // The reviewer reads the chat and the form, not the events' internals.
    expect(await page.locator('.tab[data-tab="chat"]').getAttribute("aria-selected")).toBe("true");
    await expect.poll(() => page.locator("#chat .message").count()).toBeGreaterThan(0);
    expect(await page.locator("#event").isVisible()).toBe(false);
    expect(await page.locator("#session-annotated").isDisabled()).toBe(true);
    expect(await page.locator("#annotate-save").textContent()).toBe("Save & next");
    mkdirSync(screenshotsDir, { recursive: true });
    await page.screenshot({ path: join(screenshotsDir, "review-queue.png") });

    await page.locator("#thumb-down").click();
    await page.locator("#annotate-note").fill("the worst");
    await page.locator("#annotate-save").click();
    await opened(page, ids[1]!);
    expect((await feedbackOf(ids[0]!)).annotations).toMatchObject([{ by: REVIEWER, thumbs: "down", note: "the worst" }]);
    await expect.poll(() => page.locator("#queue-count").textContent()).toBe(`${ids.length - 1} to review`);
    expect(await rows(page)).not.toContain(ids[0]);
    expect(new URL(page.url()).hash).toMatch(new RegExp(`^#queue&sort=lowestScore&scorer=quality&session=${ids[1]}`));

    await page.locator("#queue-skip").click();
    await opened(page, ids[2]!);
    expect(await page.locator("#queue-count").textContent()).toBe(`${ids.length - 1} to review (1 skipped)`);
    expect((await feedbackOf(ids[1]!)).annotations).toEqual([]);

    await page.locator("#annotate-labels").fill("reviewed");
    await page.locator("#annotate-save").click();
    await opened(page, ids[3]!);
    await expect.poll(() => page.locator("#queue-count").textContent()).toBe(`${ids.length - 2} to review (1 skipped)`);
    expect((await api<SessionsPage>(server.url, "sessions?scorer=quality&annotated=false")).total).toBe(ids.length - 2);

    // Out of the queue: the session stays open, the list lists annotated sessions again.
    await page.locator("#queue-exit").click();
    await expect.poll(() => page.locator("#queue-bar").isVisible()).toBe(false);
    expect(new URL(page.url()).hash).toMatch(new RegExp(`^#session=${ids[3]}`));
    await answered(page, "sort=lowestScore&scorer=quality");
    expect(await rows(page)).toContain(ids[0]);
    expect(await page.locator("#session-annotated").isDisabled()).toBe(false);
    expect(page.problems).toEqual([]);
    await page.close();
  });

  test("says when nothing is left to review", async () => {
    const page = await newPage();
    await page.goto(`${server.url}/#queue&search=nothing-matches-this`);
    await expect.poll(() => page.locator("#queue-count").textContent()).toBe("Nothing left to review");
    expect(await page.locator("#title").textContent()).toBe("No session open");
    expect(page.problems).toEqual([]);
    await page.close();
  });
});
