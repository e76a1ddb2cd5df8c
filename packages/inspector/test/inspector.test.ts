// The inspector in Debian's chromium (playwright-core, never a downloaded browser) against a
// real `openharness serve`: sessions recorded through the API with the scripted models, then
// opened, stepped through by keyboard, searched, forked and continued in the page.

import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Browser, type Page, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { JsonPatchOperation as PatchOp, Recorded, SessionDetail as SessionSummary, StateAt } from "@openharness/client";
import { diff } from "../src/diff";
import { formatDuration, millisBetween } from "../src/tape";
import { type Served, api, binary, idle, importJsonl, repoRoot, screenshotsDir, serve, tempDir, until } from "./serve";

const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";

let server: Served;
let browser: Browser;
/** A planner-executor session, waiting for its approval: 15 events, two executor calls. */
let planner: string;
/** A chat session of two turns, idle. */
let chat: string;

async function record(workflow: string, input: string): Promise<string> {
  const { session } = await api<{ session: string }>(server.url, "sessions", { method: "POST", body: { workflow, input } });
  await settled(session);
  return session;
}

const settled = (session: string): Promise<SessionSummary> => idle<SessionSummary>(server.url, session);

async function events(session: string): Promise<Recorded[]> {
  return (await api<{ events: Recorded[] }>(server.url, `sessions/${session}/events?limit=1000`)).events;
}

async function open(session: string, at?: number): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1440, height: 860 } });
  const problems: string[] = [];
  page.on("pageerror", (error) => problems.push(error.message));
  page.on("console", (message) => {
    if (message.type() === "error") problems.push(`${message.text()} at ${message.location().url}`);
  });
  page.on("response", (response) => {
    if (response.status() >= 400) problems.push(`${response.status()} ${response.request().method()} ${response.url()}`);
  });
  (page as Page & { problems: string[] }).problems = problems;
  // These tests read every event's row: the full view (the compact view is the default).
  await page.addInitScript(() => localStorage.setItem("openharness.inspector.view", "full"));
  await page.goto(`${server.url}/#session=${session}${at === undefined ? "" : `&at=${at}`}`);
  return page;
}

/** Waits until the page shows `position` with its state and patch. */
async function at(page: Page, position: number): Promise<void> {
  await page.waitForFunction((p) => document.body.dataset.position === String(p) && document.body.dataset.view === String(p), position);
}

/**
 * Where downloads are kept: an ignored folder (target/), so a failed check can be read
 * afterwards and a test run never changes a tracked file.
 */
const downloadsDir = join(repoRoot, "target", "downloads");

/** Clicks the download button; the file the browser saved, kept as `target/downloads/<session>.jsonl`. */
async function downloadFrom(page: Page, session: string): Promise<string> {
  const [download] = await Promise.all([page.waitForEvent("download"), page.locator("#download").click()]);
  expect(download.suggestedFilename()).toBe(`${session}.jsonl`);
  mkdirSync(downloadsDir, { recursive: true });
  const file = join(downloadsDir, `${session}.jsonl`);
  await download.saveAs(file);
  return file;
}

function jsonLines(file: string): Record<string, unknown>[] {
  return readFileSync(file, "utf8").trimEnd().split("\n").map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** `openharness verify --json FILE` with the real binary. */
function runVerify(file: string): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(binary(), ["verify", "--json", file], { encoding: "utf8" });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** The verdict of `openharness verify --json FILE`, failing unless it exits 0 (verified). */
function verify(file: string): Record<string, unknown> {
  const result = runVerify(file);
  if (result.status !== 0) throw new Error(`openharness verify ${file} exited ${result.status}: ${result.stdout}${result.stderr}`);
  return JSON.parse(result.stdout) as Record<string, unknown>;
}

function problems(page: Page): string[] {
  return (page as Page & { problems: string[] }).problems;
}

beforeAll(async () => {
  server = await serve();
  // The server embeds the built files when cargo builds it: a binary built before the last
  // `npm run build` would test an older page.
  const served = await (await fetch(`${server.url}/inspector.js`)).text();
  const built = readFileSync(join(repoRoot, "crates/server/inspector/inspector.js"), "utf8");
  if (served !== built) {
    throw new Error("the openharness binary embeds an older inspector: run `cargo build -p openharness-cli --bin openharness` after `npm run build`");
  }
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox"] });
  planner = await record("planner-executor", "Plan a trip");
  chat = await record("chat", "Hello");
  await api(server.url, `sessions/${chat}/input`, { method: "POST", body: { text: "And then?" } });
  await settled(chat);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

describe("the inspector", () => {
  test("opens a session at its end: the sessions, the timeline grouped per agent call, the state", async () => {
    const page = await open(planner);
    const recorded = await events(planner);
    expect(recorded).toHaveLength(15);
    await at(page, 15);
    // Both sessions are listed with their status.
    await expect.poll(() => page.locator(`li.session[data-session="${planner}"] .badge`).textContent()).toBe("waiting");
    expect(await page.locator(`li.session[data-session="${chat}"] .badge`).textContent()).toBe("idle");
    // The last event is at the cursor.
    expect(await page.locator(".row.cursor .name").textContent()).toBe("workflow:completed");
    expect(await page.locator("#event .event-name").textContent()).toBe("workflow:completed");
    // The planner's call and both executor calls are groups: agent:started … agent:completed.
    const calls = await page.locator(".row .call").allTextContents();
    expect(await page.locator(".row .call").first().getAttribute("title")).toBe("3 events, up to position 5");
    expect(calls).toEqual(["planner → 5 · success", "executor → 9 · success", "executor → 13 · success"]);
    const plan = recorded.findIndex((e) => e.name === "plan:created");
    expect(await page.locator(`.row[data-position="${plan + 1}"]`).getAttribute("class")).toContain("grouped");
    const taskStarted = recorded.findIndex((e) => e.name === "task:started");
    expect(await page.locator(`.row[data-position="${taskStarted + 1}"]`).getAttribute("class")).not.toContain("grouped");
    // The state at the end, as a tree.
    await expect.poll(() => page.locator("#state").innerText()).toContain('goal: "Plan a trip"');
    expect(await page.locator("#state").innerText()).toContain("completed: 2");
    expect(problems(page)).toEqual([]);
    await page.close();
  });

  test("steps back by keyboard, showing the patch each event made and the state there", async () => {
    const page = await open(planner);
    await at(page, 15);
    const recorded = await events(planner);
    const plan = recorded.findIndex((e) => e.name === "plan:created") + 1;
    for (let position = 14; position >= plan; position--) {
      await page.keyboard.press(position % 2 === 0 ? "k" : "ArrowUp");
      await at(page, position);
    }
    expect(await page.locator("#event .event-name").textContent()).toBe("plan:created");
    const ops = await page.locator("#patch .op").allInnerTexts();
    const served = await api<PatchOp[]>(server.url, `sessions/${planner}/diff?from=${plan - 1}&to=${plan}`);
    expect(served.map((op) => op.path)).toEqual(["/tasks/0", "/tasks/1"]);
    expect(ops).toHaveLength(2);
    expect(ops[0]).toContain("add");
    expect(ops[0]).toContain("/tasks/0");
    expect(ops[0]).toContain("Review the plan");
    // The state is the one at that position: the tasks exist, none is done yet.
    const state = await page.locator("#state").innerText();
    expect(state).toContain("completed: 0");
    expect(state).toContain('"Review the plan"');
    expect(state).not.toContain('"done"');
    // The nodes the patch touched are marked.
    expect(await page.locator('#state [data-pointer="/tasks/0"].touched').count()).toBe(1);
    // One more back: agent:started changed nothing.
    await page.keyboard.press("k");
    await at(page, plan - 1);
    expect(await page.locator("#patch").innerText()).toContain("did not change the state");
    // j steps forward again.
    await page.keyboard.press("j");
    await at(page, plan);
    await expect.poll(() => page.url()).toContain(`at=${plan}`);
    expect(problems(page)).toEqual([]);
    await page.close();
  });

  test("a patch shows the value it replaced beside the new one", async () => {
    const recorded = await events(planner);
    let found: { position: number; op: PatchOp } | undefined;
    for (let p = 1; p <= recorded.length && !found; p++) {
      const op = (await api<PatchOp[]>(server.url, `sessions/${planner}/diff?from=${p - 1}&to=${p}`)).find((o) => o.op === "replace");
      if (op) found = { position: p, op };
    }
    if (!found || found.op.op !== "replace") throw new Error("no event of the planner replaced a value");
    const [before] = await api<StateAt[]>(server.url, `sessions/${planner}/states?at=${found.position - 1}`);
    const old = found.op.path
      .slice(1)
      .split("/")
      .reduce<unknown>((value, key) => (value as Record<string, unknown>)[key], before!.state);
    const page = await open(planner, found.position);
    await at(page, found.position);
    const op = page.locator(`#patch .op.replace`).first();
    expect(await op.locator(".path").textContent()).toBe(found.op.path);
    expect(await op.locator(".old").textContent()).toBe(JSON.stringify(old));
    expect(await op.locator(".value").textContent()).toBe(JSON.stringify(found.op.value));
    expect(problems(page)).toEqual([]);
    await page.close();
  });

  test("goes to a position, searches event names and jumps to the causing event", async () => {
    const page = await open(planner);
    await at(page, 15);
    await page.keyboard.press("g");
    await page.keyboard.type("3");
    await page.keyboard.press("Enter");
    await at(page, 3);
    expect(await page.locator("#event .event-name").textContent()).toBe("agent:started");
    await page.keyboard.press("/");
    await page.keyboard.type("task:completed");
    await expect.poll(() => page.locator("#matches").textContent()).toBe("2 matches");
    const recorded = await events(planner);
    const completed = recorded.filter((e) => e.name === "task:completed").map((e) => e.seq + 1);
    await at(page, completed[0]!);
    await page.keyboard.press("Escape");
    await page.keyboard.press("n");
    await at(page, completed[1]!);
    expect(await page.locator(".row.match").count()).toBe(2);
    // The second task:completed was caused by the second task:started.
    const current = recorded[completed[1]! - 1]!;
    const cause = recorded.find((e) => e.id === current.causedBy)!;
    expect(cause.name).toBe("task:started");
    await page.keyboard.press("c");
    await at(page, cause.seq + 1);
    expect(await page.locator("#event .event-name").textContent()).toBe("task:started");
    // And that event lists what it caused, the way back.
    expect(await page.locator("#event .effects").innerText()).toContain(`${completed[1]} task:completed`);
    expect(problems(page)).toEqual([]);
    await page.close();
  });

  test("shows which protocol started a turn: a response of the openai SDK's shape is badged open-responses", async () => {
    const response = await api<{ conversation: { id: string } }>(server.url, "v1/responses", {
      method: "POST",
      body: { model: "chat", input: "Hello through Open Responses" },
    });
    const session = response.conversation.id;
    await settled(session);
    const page = await open(session);
    const recorded = await events(session);
    const input = recorded.findIndex((e) => e.name === "user:input") + 1;
    const row = page.locator(`.row[data-position="${input}"]`);
    await expect.poll(() => row.locator(".via").textContent()).toBe("open-responses");
    expect(await row.locator(".via").getAttribute("title")).toContain("open-responses");
    // A turn started natively has no badge.
    const native = await open(chat);
    await native.locator(".row .name").first().waitFor();
    expect(await native.locator(".row .via").count()).toBe(0);
    expect(problems(page)).toEqual([]);
    await page.close();
    await native.close();
  });

  test("the compact view shows one row per agent call; j/k step row by row; a call expands", async () => {
    const page = await open(planner);
    await at(page, 15);
    const shown = (): Promise<number[]> => page.locator(".row").evaluateAll((rows) => rows.map((r) => Number((r as HTMLElement).dataset.position)));
    expect(await shown()).toEqual(Array.from({ length: 16 }, (_, p) => p));
    await page.keyboard.press("x");
    // The three calls (planner at 3, executors at 7 and 11) are one row each.
    await expect.poll(shown).toEqual([0, 1, 2, 3, 6, 7, 10, 11, 14, 15]);
    expect(await page.locator(".row.collapsed .call").allTextContents()).toHaveLength(3);
    await page.keyboard.press("k");
    await at(page, 14);
    await page.keyboard.press("k");
    await at(page, 11);
    expect(await page.locator(".row.cursor .name").textContent()).toBe("agent:started");
    // Expanding the planner's call shows its events again.
    await page.locator('.row [data-toggle="2"]').click();
    await expect.poll(shown).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 10, 11, 14, 15]);
    await page.keyboard.press("x");
    await expect.poll(shown).toEqual(Array.from({ length: 16 }, (_, p) => p));
    expect(problems(page)).toEqual([]);
    await page.close();
  });

  test("forks at the cursor: the fork runs, opens, and is listed with a link to its parent", async () => {
    const before = (await api<{ sessions: SessionSummary[] }>(server.url, "sessions")).sessions.length;
    const page = await open(chat);
    const recorded = await events(chat);
    // Fork right after the first turn's user input: the fork answers it again.
    const firstInput = recorded.findIndex((e) => e.name === "user:input") + 1;
    await page.goto(`${server.url}/#session=${chat}&at=${firstInput}`);
    await at(page, firstInput);
    await page.keyboard.press("f");
    // The fork is created within a moment of the key; once in a CI run (a loaded machine) it
    // never was, as if the key was lost. Press once more only if no fork exists after 5 s, so
    // that a slow fork is never made twice.
    const count = async () => (await api<{ sessions: SessionSummary[] }>(server.url, "sessions")).sessions.length;
    const created = () => count().then((n) => n > before || undefined);
    if (!(await until("the fork to be created", created, 5_000).catch(() => false))) {
      await page.keyboard.press("f");
      await until("the fork to be created (after a second press)", created);
    }
    const fork = await until("the fork to open", async () => {
      const hash = new URLSearchParams(new URL(page.url()).hash.slice(1)).get("session");
      return hash && hash !== chat ? hash : undefined;
    });
    const summary = await settled(fork);
    expect(summary.parent).toBe(chat);
    const sessions = (await api<{ sessions: SessionSummary[] }>(server.url, "sessions")).sessions;
    expect(sessions).toHaveLength(before + 1);
    // Listed first (the most recently active), selected, with a link to its parent.
    const item = page.locator(`li.session[data-session="${fork}"]`);
    await expect.poll(() => item.getAttribute("class")).toContain("selected");
    expect(await item.locator(".lineage a.parent").getAttribute("data-parent")).toBe(chat);
    const order = await page.locator("li.session").evaluateAll((items) => items.map((li) => (li as HTMLElement).dataset.session));
    expect(order[0]).toBe(fork);
    // The fork's state has the first exchange only, answered again.
    await expect.poll(() => page.locator("#state").innerText(), { timeout: 10_000 }).toContain("exchanges: [1]");
    // Its parent's events before the fork point come first, dimmed, then its own.
    await expect.poll(() => page.locator(".row.inherited").count(), { timeout: 10_000 }).toBe(firstInput);
    // Rows are laid out before their events arrive (named "…" until then).
    await expect
      .poll(() => page.locator(".row.inherited .name").allTextContents(), { timeout: 10_000 })
      .toEqual(recorded.slice(0, firstInput).map((e) => e.name));
    const tops = await page
      .locator(".row")
      .evaluateAll((rows) => rows.map((row) => ({ inherited: row.classList.contains("inherited"), top: Number.parseFloat((row as HTMLElement).style.top) })));
    const lastInherited = Math.max(...tops.filter((row) => row.inherited).map((row) => row.top));
    const firstOwn = Math.min(...tops.filter((row) => !row.inherited).map((row) => row.top));
    expect(lastInherited).toBeLessThan(firstOwn);
    expect(Number(await page.locator(".row.inherited").first().evaluate((row) => getComputedStyle(row).opacity))).toBeLessThan(1);
    expect(await page.locator('.row[data-position="0"] .name').textContent()).toBe(`(fork point: the parent's state at ${firstInput})`);
    // The fork's agent call was started by the parent's input: `c` opens the parent there.
    const forkEvents = await events(fork);
    const started = forkEvents.findIndex((e) => e.name === "agent:started") + 1;
    expect(forkEvents[started - 1]!.causedBy).toBe(recorded[firstInput - 1]!.id);
    await page.goto(`${server.url}/#session=${fork}&at=${started}`);
    await at(page, started);
    await page.keyboard.press("c");
    await until("the parent to open at the cause", async () => {
      const hash = new URLSearchParams(new URL(page.url()).hash.slice(1));
      return hash.get("session") === chat && hash.get("at") === String(firstInput) ? true : undefined;
    });
    await at(page, firstInput);
    expect(problems(page)).toEqual([]);
    await page.close();
    // A long walk (fork, run, list, inherited rows, the cause in the parent): each wait has its
    // own limit; the whole needs more than the default 30 s on a loaded machine.
  }, 60_000);

  test("continues a session with input and follows it live to the end of the new turn", async () => {
    const page = await open(chat);
    const len = (await events(chat)).length;
    await at(page, len);
    await page.keyboard.press("i");
    await page.keyboard.type("One more thing");
    await page.keyboard.press("Enter");
    const summary = await until("the new turn to end", async () => {
      const s = await api<SessionSummary>(server.url, `sessions/${chat}`);
      return s.len > len && s.status === "idle" && !s.runningHere ? s : undefined;
    });
    // The page followed: its cursor is at the new end, which shows the new exchange.
    await at(page, summary.len);
    expect(await page.locator(".row.cursor .name").textContent()).toBe("workflow:completed");
    await expect.poll(() => page.locator("#state").innerText()).toContain('"One more thing"');
    expect(problems(page)).toEqual([]);
    await page.close();
  });

  test("answers the open input request of a waiting session", async () => {
    const session = await record("planner-executor", "Ship the release");
    const page = await open(session);
    await at(page, 15);
    expect(await page.locator("#input-hint").textContent()).toBe("answers the open input request");
    // The question is shown beside the box that answers it.
    const asked = (await events(session)).filter((e) => e.name === "input:requested").pop()!;
    await expect.poll(() => page.locator("#question").textContent()).toBe((asked.payload as { prompt: string }).prompt);
    expect(await page.locator("#question").isVisible()).toBe(true);
    await page.locator("#input").fill("yes");
    await page.locator("#input").press("Enter");
    const summary = await until("the answer's turn to end", async () => {
      const s = await api<SessionSummary>(server.url, `sessions/${session}`);
      return s.len > 15 && s.status !== "running" && !s.runningHere ? s : undefined;
    });
    const recorded = await events(session);
    expect(recorded.map((e) => e.name)).toContain("input:received");
    await at(page, summary.len);
    expect(problems(page)).toEqual([]);
    await page.close();
  });

  test("forks at a pending question with another answer from the form; the parent still waits", async () => {
    const session = await record("planner-executor", "Ship the release");
    const page = await open(session);
    await at(page, 15);
    const asked = (await events(session)).filter((e) => e.name === "input:requested").pop()!;
    await page.locator('.tab[data-tab="forks"]').click();
    await expect.poll(() => page.locator("#fork-at").inputValue()).toBe("15");
    await page.locator("#fork-answer").fill("no, hold it");
    await page.locator("#fork-form button[type=submit]").click();
    const fork = await until("the fork to open", async () => {
      const hash = new URLSearchParams(new URL(page.url()).hash.slice(1)).get("session");
      return hash && hash !== session ? hash : undefined;
    });
    const own = await until("the fork's answer turn to end", async () => {
      const recorded = await events(fork);
      const summary = await api<SessionSummary>(server.url, `sessions/${fork}`);
      return recorded.some((e) => e.name === "input:received") && summary.status !== "running" && !summary.runningHere ? recorded : undefined;
    });
    // The fork answered the parent's question (by its id) with the form's text.
    const received = own.find((e) => e.name === "input:received")!;
    expect(received.payload).toMatchObject({ requestId: asked.id, text: "no, hold it" });
    // The parent was not answered: it still waits, with nothing after its question's turn.
    const parent = await api<SessionSummary>(server.url, `sessions/${session}`);
    expect(parent.status).toBe("waiting");
    expect((await events(session)).some((e) => e.name === "input:received")).toBe(false);
    await expect.poll(() => page.locator("#fork-answer").inputValue()).toBe("");
    expect(problems(page)).toEqual([]);
    await page.close();
  });

  test("each agent call shows its duration and tokens; an event is named by its position only", async () => {
    const page = await open(planner);
    await at(page, 15);
    const recorded = await events(planner);
    const expected = recorded
      .map((e, seq) => ({ e, seq }))
      .filter(({ e }) => e.name === "agent:started")
      .map(({ e, seq }) => {
        const end = recorded.slice(seq).find((c) => c.name === "agent:completed" && c.causedBy === e.causedBy)!;
        const usage = (end.payload as { usage: { inputTokens: number; outputTokens: number } }).usage;
        return `${formatDuration(millisBetween(e.timestamp, end.timestamp))} · ${usage.inputTokens.toLocaleString("en")} in / ${usage.outputTokens.toLocaleString("en")} out tok`;
      });
    expect(expected).toHaveLength(3);
    await expect.poll(() => page.locator(".row .figures").allTextContents()).toEqual(expected);
    // A finished session's calls tick no clock.
    expect(await page.locator(".row .figures[data-running]").count()).toBe(0);
    // The event panel names the event at the cursor by the position it leads to, as the rows do.
    expect(await page.locator("#event .event-seq").textContent()).toBe("position 15");
    expect(await page.locator(".row.cursor .seq").textContent()).toBe("15");
    // The figures of the call at the cursor are in the event panel too.
    await page.keyboard.press("g");
    await page.keyboard.type("4");
    await page.keyboard.press("Enter");
    await at(page, 4);
    expect(await page.locator("#event .call-figures").textContent()).toBe(expected[0]);
    expect(problems(page)).toEqual([]);
    await page.close();
  });

  test("the chat view shows the UI messages at the cursor and moves with it", async () => {
    const page = await open(chat);
    const recorded = await events(chat);
    await at(page, recorded.length);
    await page.keyboard.press("t");
    expect(await page.locator('.tab[data-tab="chat"]').getAttribute("aria-selected")).toBe("true");
    expect(await page.locator("#state").isVisible()).toBe(false);
    const messagesAt = async (position: number) =>
      api<{ id: string; role: string }[]>(server.url, `sessions/${chat}/messages?shape=ui&at=${position}`);
    const shown = () => page.locator("#chat .message").evaluateAll((items) => items.map((m) => (m as HTMLElement).dataset.id));
    const atEnd = await messagesAt(recorded.length);
    expect(atEnd.length).toBeGreaterThanOrEqual(4);
    await expect.poll(shown).toEqual(atEnd.map((m) => m.id));
    expect(await page.locator("#chat").innerText()).toContain("And then?");
    // Back to the end of the first turn: the second exchange is gone from the chat too.
    const firstTurnEnd = recorded.findIndex((e) => e.name === "workflow:completed") + 1;
    await page.keyboard.press("g");
    await page.keyboard.type(String(firstTurnEnd));
    await page.keyboard.press("Enter");
    await at(page, firstTurnEnd);
    const atFirst = await messagesAt(firstTurnEnd);
    expect(atFirst.length).toBeLessThan(atEnd.length);
    await expect.poll(shown).toEqual(atFirst.map((m) => m.id));
    expect(await page.locator("#chat").innerText()).not.toContain("And then?");
    expect(problems(page)).toEqual([]);
    await page.close();
  });

  test("forks as a tree: a fork with another input from the form, its lineage, and where it parts from its parent", async () => {
    const page = await open(chat);
    const recorded = await events(chat);
    const firstTurnEnd = recorded.findIndex((e) => e.name === "workflow:completed") + 1;
    await at(page, recorded.length);
    await page.locator('.tab[data-tab="forks"]').click();
    // The fork form, at the cursor's position; a state edit that is not an object is refused.
    await expect.poll(() => page.locator("#fork-at").inputValue()).toBe(String(recorded.length));
    await page.locator("#fork-at").fill(String(firstTurnEnd));
    await page.locator("#fork-state").fill("[1, 2]");
    await page.locator("#fork-form button[type=submit]").click();
    await expect.poll(() => page.locator("#fork-error").textContent()).toContain("JSON merge patch: an object");
    await page.locator("#fork-state").fill("");
    await page.locator("#fork-input").fill("Goodbye");
    await page.locator("#fork-form button[type=submit]").click();
    const fork = await until("the fork to open", async () => {
      const hash = new URLSearchParams(new URL(page.url()).hash.slice(1)).get("session");
      return hash && hash !== chat ? hash : undefined;
    });
    await until("the fork's input turn to end", async () => {
      const own = await events(fork);
      const summary = await api<SessionSummary>(server.url, `sessions/${fork}`);
      return own.some((e) => e.name === "user:input") && summary.status !== "running" && !summary.runningHere ? own : undefined;
    });
    // The lineage: the chat session at the root, this fork among its forks, marked as open.
    const forks = (await api<{ sessions: SessionSummary[] }>(server.url, `sessions?forkOf=${chat}&sort=oldest`)).sessions;
    expect(forks.map((f) => f.id)).toContain(fork);
    await page.locator('.tab[data-tab="forks"]').click();
    await expect.poll(() => page.locator("#lineage .session-link").evaluateAll((links) => links.map((l) => (l as HTMLElement).dataset.session))).toEqual([
      chat,
      ...forks.map((f) => f.id),
    ]);
    expect(await page.locator("#lineage .session-link.open").getAttribute("data-session")).toBe(fork);
    // Compared with its parent: they part at the input, "And then?" in the parent, "Goodbye" in the fork.
    await page.locator('.tab[data-tab="compare"]').click();
    await expect.poll(() => page.locator("#compare").getAttribute("data-state"), { timeout: 10_000 }).toBe("shown");
    const comparison = await api<{ agree: number; divergence: { aAt: { session: string; position: number }; bAt: { session: string; position: number } } }>(
      server.url,
      `sessions/${fork}/compare?with=${chat}`,
    );
    expect(await page.locator("#compare .compare-verdict").textContent()).toBe(
      `${comparison.agree} events agree; they part at position ${comparison.agree + 1} (counted from the root).`,
    );
    const text = await page.locator("#compare").innerText();
    expect(text).toContain("Goodbye");
    expect(text).toContain("And then?");
    // The parent's side links to its event there: a click opens the parent at that position.
    const parentSide = page.locator('#compare .compare-side[data-side="B"] .session-link');
    expect(await parentSide.getAttribute("data-session")).toBe(chat);
    await parentSide.click();
    await page.waitForFunction((session) => document.querySelector(`li.session.selected`)?.getAttribute("data-session") === session, chat);
    await at(page, comparison.divergence.bAt.position);
    expect(new URLSearchParams(new URL(page.url()).hash.slice(1)).get("session")).toBe(chat);
    expect(await page.locator(".row.cursor .name").textContent()).toBe("user:input");
    expect(problems(page)).toEqual([]);
    await page.close();
  });

  test("cancel shows while a turn runs and asks the server to cancel it", async () => {
    // The scripted turns end in milliseconds: until the page asks to cancel, the session's
    // summary and the session list both tell it the session runs.
    const page = await browser.newPage({ viewport: { width: 1440, height: 860 } });
    let cancelAsked = false;
    const running = (summary: SessionSummary) =>
      summary.id === chat && !cancelAsked ? { ...summary, status: "running", runningHere: true } : summary;
    await page.route(`**/sessions/${chat}`, async (route) => {
      if (route.request().method() !== "GET") return route.continue();
      const response = await route.fetch();
      await route.fulfill({ response, json: running((await response.json()) as SessionSummary) });
    });
    await page.route(
      (url) => url.pathname.endsWith("/sessions"),
      async (route) => {
        if (route.request().method() !== "GET") return route.continue();
        const response = await route.fetch();
        const listed = (await response.json()) as { sessions: SessionSummary[] };
        await route.fulfill({ response, json: { ...listed, sessions: listed.sessions.map(running) } });
      },
    );
    page.on("request", (r) => {
      if (r.method() === "POST" && new URL(r.url()).pathname.endsWith(`/sessions/${chat}/cancel`)) cancelAsked = true;
    });
    await page.goto(`${server.url}/#session=${chat}`);
    const cancel = page.locator("#cancel");
    await expect.poll(() => cancel.isVisible()).toBe(true);
    const [request] = await Promise.all([
      page.waitForRequest((r) => r.method() === "POST" && new URL(r.url()).pathname.endsWith(`/sessions/${chat}/cancel`)),
      cancel.click(),
    ]);
    expect(await (await request.response())!.json()).toEqual({ cancelled: false });
    // The list says it is idle: the button goes.
    await expect.poll(() => cancel.isVisible(), { timeout: 6000 }).toBe(false);
    await page.close();
  });

  test("downloads the session as the chained JSONL `openharness export` writes: `openharness verify` checks it", async () => {
    const page = await open(chat);
    const recorded = await events(chat);
    await at(page, recorded.length);
    const file = await downloadFrom(page, chat);
    const lines = jsonLines(file);
    expect(lines[0]).toEqual({ session: chat, begin: true, chain: "sha256" });
    const eventLines = lines.slice(1, -1);
    expect(eventLines.map((line) => line.id)).toEqual(recorded.map((e) => e.id));
    // Every event line carries its chain value, the end line seals the block with the last.
    for (const line of eventLines) expect(line.chain).toMatch(/^[0-9a-f]{64}$/);
    expect(lines[lines.length - 1]).toMatchObject({ session: chat, end: true, count: recorded.length, chain: eventLines[eventLines.length - 1]!.chain });
    // Byte for byte the server's export, which the real `openharness verify` accepts.
    expect(readFileSync(file, "utf8")).toBe(await (await fetch(`${server.url}/sessions/${chat}/export`)).text());
    expect(verify(file)).toMatchObject({ verified: true, sessions: [{ session: chat, states: expect.anything() }] });
    const dir = tempDir();
    importJsonl(join(dir, "store.redb"), file);
    rmSync(dir, { recursive: true, force: true });
    // One changed byte, and verify says the file is not as it was exported, naming the line.
    const changed = join(downloadsDir, `${chat}.changed.jsonl`);
    writeFileSync(changed, readFileSync(file, "utf8").replace('"text":"And then?"', '"text":"And than?"'));
    expect(readFileSync(changed, "utf8")).not.toBe(readFileSync(file, "utf8"));
    const refused = runVerify(changed);
    expect(refused.status).toBe(1);
    expect(JSON.parse(refused.stdout)).toMatchObject({ verified: false, broken: { session: chat } });
    expect(problems(page)).toEqual([]);
    await page.close();
  });

  test("a fork's download holds its parent's block first, and verifies on its own", async () => {
    const { session: fork } = await api<{ session: string }>(server.url, `sessions/${chat}/fork`, {
      method: "POST",
      body: { at: "position", position: 2, input: "Somewhere else?" },
    });
    await settled(fork);
    const page = await open(fork);
    await at(page, (await events(fork)).length);
    const file = await downloadFrom(page, fork);
    const blocks = jsonLines(file).filter((line) => line.begin === true).map((line) => line.session);
    expect(blocks).toEqual([chat, fork]);
    expect(verify(file)).toMatchObject({ verified: true, sessions: [{ session: chat }, { session: fork }] });
    expect(problems(page)).toEqual([]);
    await page.close();
  });

  test("from 768 px wide: the header's controls are on screen; the compact view is the default", async () => {
    const page = await browser.newPage({ viewport: { width: 768, height: 800 } });
    await page.goto(`${server.url}/#session=${planner}`);
    await at(page, 15);
    expect(await page.evaluate(() => document.body.classList.contains("compact"))).toBe(true);
    const shown = await page.locator(".row").evaluateAll((rows) => rows.map((r) => Number((r as HTMLElement).dataset.position)));
    expect(shown).toEqual([0, 1, 2, 3, 6, 7, 10, 11, 14, 15]);
    for (const id of ["search", "goto", "compact", "follow", "fork", "download", "help-button", "title"]) {
      const box = (await page.locator(`#${id}`).boundingBox())!;
      expect(box, id).not.toBeNull();
      expect(box.x, id).toBeGreaterThanOrEqual(0);
      expect(box.x + box.width, id).toBeLessThanOrEqual(768);
    }
    // The panes do not overlap, and the page does not scroll sideways.
    const timeline = (await page.locator("#timeline").boundingBox())!;
    const detail = (await page.locator(".detail").boundingBox())!;
    expect(timeline.x + timeline.width).toBeLessThanOrEqual(detail.x + 1);
    expect(await page.locator("#sessions li.session").count()).toBeGreaterThan(0);
    expect(await page.locator("#session-more").isVisible()).toBe(false);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(768);
    await page.close();
  });

  test("computes the same patch as the server for every position of every session", async () => {
    const { sessions } = await api<{ sessions: SessionSummary[] }>(server.url, "sessions");
    expect(sessions.length).toBeGreaterThanOrEqual(3);
    let compared = 0;
    for (const session of sessions) {
      const positions = Array.from({ length: session.len + 1 }, (_, p) => p);
      const states = await api<StateAt[]>(server.url, `sessions/${session.id}/states?at=${positions.join(",")}`);
      for (let p = 1; p <= session.len; p++) {
        const served = await api<PatchOp[]>(server.url, `sessions/${session.id}/diff?from=${p - 1}&to=${p}`);
        expect(diff(states[p - 1]!.state, states[p]!.state)).toEqual(served);
        compared++;
      }
    }
    expect(compared).toBeGreaterThan(40);
  });

  test("takes the screenshot of the README", async () => {
    const page = await open(planner);
    await at(page, 15);
    const recorded = await events(planner);
    const plan = recorded.findIndex((e) => e.name === "plan:created") + 1;
    await page.keyboard.press("g");
    await page.keyboard.type(String(plan));
    await page.keyboard.press("Enter");
    await at(page, plan);
    const dir = screenshotsDir;
    mkdirSync(dir, { recursive: true });
    const shot = await page.screenshot({ path: join(dir, "inspector.png") });
    expect(shot.length).toBeGreaterThan(20_000);
    await page.close();
  });
});

describe("with API keys", () => {
  let keyed: Served;
  beforeAll(async () => {
    keyed = await serve({ apiKey: "inspector-secret" });
    await api(keyed.url, "sessions", { method: "POST", body: { workflow: "chat", input: "Hi" }, key: "inspector-secret" });
  });
  afterAll(async () => keyed?.stop());

  test("the page asks for the key, then sends it with every call", async () => {
    const page = await browser.newPage();
    const unauthorized: string[] = [];
    page.on("response", (response) => {
      if (response.status() === 401) unauthorized.push(response.url());
    });
    await page.goto(`${keyed.url}/`);
    const dialog = page.locator("#key-dialog");
    await expect.poll(() => dialog.evaluate((d) => (d as HTMLDialogElement).open)).toBe(true);
    expect(unauthorized.some((url) => new URL(url).pathname.endsWith("/sessions"))).toBe(true);
    await page.locator("#key").fill("inspector-secret");
    await page.locator("#key").press("Enter");
    await expect.poll(() => page.locator("li.session").count()).toBe(1);
    // Asked with the key, the server says it serves experiments.
    await expect.poll(() => page.locator("#experiments-button").isVisible()).toBe(true);
    await page.locator("li.session a").click();
    await page.waitForFunction(() => document.body.dataset.view !== undefined);
    await expect.poll(() => page.locator("#state").innerText()).toContain('"Hi"');
    // Continuing the session and following it live send the key too (SSE read with fetch).
    const id = (await page.locator("li.session").getAttribute("data-session"))!;
    await page.locator("#input").fill("Again");
    await page.locator("#input").press("Enter");
    const summary = await until("the keyed turn to end", async () => {
      const s = await api<SessionSummary>(keyed.url, `sessions/${id}`, { key: "inspector-secret" });
      return s.len > 6 && s.status === "idle" && !s.runningHere ? s : undefined;
    });
    await page.waitForFunction((n) => document.body.dataset.view === String(n), summary.len);
    expect(await page.evaluate(() => document.body.dataset.live)).toBe("live");
    await expect.poll(() => page.locator("#state").innerText()).toContain('"Again"');
    expect(unauthorized.filter((url) => !new URL(url).pathname.endsWith("/sessions"))).toEqual([]);
    await page.close();
  });
});
