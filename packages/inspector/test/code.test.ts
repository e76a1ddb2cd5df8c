// Which code wrote a session, in Debian's chromium against a real `openharness serve`: a
// session recorded by this server's code opens without a word; the same session as another
// build recorded it (another fingerprint and version in its `workflow:started`, imported into a
// second store) opens with a warning that names both codes, since stepping folds it with
// today's handlers; and one whose recorded state hash today's handlers do not reproduce says at
// which position the state parts.

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import type { Recorded, SessionDetail } from "@openharness/client";
import { type Served, api, idle, importJsonl, serve, tempDir } from "./serve";

const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";

let browser: Browser;
const servers: Served[] = [];

beforeAll(async () => {
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox"] });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  for (const server of servers) await server.stop();
});

async function opened(server: Served, session: string): Promise<{ meta: string; warning: string | null; count: number }> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  await page.goto(`${server.url}/#session=${session}`);
  await page.waitForFunction(() => document.body.dataset.view !== undefined);
  const count = await page.locator("#meta .code-changed").count();
  const result = {
    meta: (await page.locator("#meta").textContent()) ?? "",
    warning: count > 0 ? await page.locator("#meta .code-changed").getAttribute("title") : null,
    count,
  };
  await page.close();
  return result;
}

test("a session recorded by other code says so in the header, naming both codes; one recorded by this code does not", async () => {
  const today = await serve();
  servers.push(today);
  const { session } = await api<{ session: string }>(today.url, "sessions", { method: "POST", body: { workflow: "chat", input: "Hello" } });
  await idle<SessionDetail>(today.url, session);
  const mine = await opened(today, session);
  expect(mine.count).toBe(0);
  expect(mine.meta).not.toContain("other code");

  // The same events as an older build wrote them, in another store.
  const { events } = await api<{ events: Recorded[] }>(today.url, `sessions/${session}/events?limit=1000`);
  const started = events[0]!;
  const { code, version } = started.payload as { code: string; version?: string };
  const older = [{ ...started, payload: { ...(started.payload as object), code: "00000000000000aa", version: "0.9.0" } }, ...events.slice(1)];
  const dir = tempDir();
  const file = join(dir, "older.jsonl");
  const lines = [{ session, begin: true }, ...older.map((event) => ({ session, ...event })), { session, end: true, count: older.length }];
  writeFileSync(file, lines.map((line) => JSON.stringify(line)).join("\n") + "\n");
  importJsonl(join(dir, "store.redb"), file);
  const other = await serve({ dir });
  servers.push(other);
  const theirs = await opened(other, session);
  expect(theirs.count).toBe(1);
  expect(theirs.meta).toContain("⚠ recorded by other code");
  expect(theirs.warning).toBe(
    `recorded by code 00000000000000aa, version 0.9.0; this server runs code ${code}${version ? `, version ${version}` : ""}. States are folded with today's handlers.`,
  );
}, 60_000);

test("a session whose recorded state hash today's handlers do not reproduce says where the state parts", async () => {
  const today = await serve();
  servers.push(today);
  const { session } = await api<{ session: string }>(today.url, "sessions", { method: "POST", body: { workflow: "chat", input: "Hello" } });
  await idle<SessionDetail>(today.url, session);
  const { events } = await api<{ events: Recorded[] }>(today.url, `sessions/${session}/events?limit=1000`);
  const hashed = events.findIndex((event) => typeof (event as { stateHash?: string }).stateHash === "string");
  expect(hashed).toBeGreaterThanOrEqual(0);
  // The live run's state after that event, as other handlers computed it: another hash.
  const tampered = events.map((event, seq) => (seq === hashed ? { ...event, stateHash: "f".repeat(64) } : event));
  const dir = tempDir();
  const file = join(dir, "tampered.jsonl");
  const lines = [{ session, begin: true }, ...tampered.map((event) => ({ session, ...event })), { session, end: true, count: tampered.length }];
  writeFileSync(file, lines.map((line) => JSON.stringify(line)).join("\n") + "\n");
  importJsonl(join(dir, "store.redb"), file);
  const other = await serve({ dir });
  servers.push(other);
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  await page.goto(`${other.url}/#session=${session}`);
  const warning = page.locator("#meta .state-parted");
  await warning.waitFor({ timeout: 10_000 });
  expect(await warning.textContent()).toBe(` · ⚠ state parts from the recording at position ${hashed + 1}`);
  const title = (await warning.getAttribute("title")) ?? "";
  expect(title).toContain(`after seq ${hashed} (${events[hashed]!.name})`);
  expect(title).toContain("state hash ffffffffffff");
  await page.close();
  // The session recorded by this server's code checks clean.
  const clean = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  await clean.goto(`${today.url}/#session=${session}`);
  await clean.waitForFunction(() => document.body.dataset.view !== undefined);
  await clean.waitForLoadState("networkidle");
  expect(await clean.locator("#meta .state-parted").count()).toBe(0);
  await clean.close();
}, 60_000);
