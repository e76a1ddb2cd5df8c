// The inspector under a mount prefix, in Debian's chromium against a real `openharness serve
// --base-path /harness` (the router nested as a program of the user's would nest it): the page
// loads at `/harness/` and `/harness`, lists the sessions, opens one on a click without leaving
// the page (no 404), and follows its new turn live — every request under `/harness/`.

import { type Browser, type Page, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { SessionDetail } from "@openharness/client";
import { type Served, api, idle, serve, until } from "./serve";

const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";

let server: Served;
let browser: Browser;
let session: string;

const settled = (id: string): Promise<SessionDetail> => idle<SessionDetail>(server.url, id);

/** A page whose failed requests, errors and requests outside the prefix are collected. */
async function newPage(): Promise<{ page: Page; problems: string[] }> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const problems: string[] = [];
  page.on("pageerror", (error) => problems.push(error.message));
  page.on("response", (response) => {
    if (response.status() >= 400) problems.push(`${response.status()} ${response.request().method()} ${response.url()}`);
  });
  page.on("request", (request) => {
    const path = new URL(request.url()).pathname;
    if (path !== "/harness" && !path.startsWith("/harness/")) problems.push(`outside the prefix: ${request.url()}`);
  });
  return { page, problems };
}

beforeAll(async () => {
  server = await serve({ basePath: "/harness" });
  expect(server.url).toMatch(/\/harness$/);
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox"] });
  ({ session } = await api<{ session: string }>(server.url, "sessions", { method: "POST", body: { workflow: "chat", input: "Hello from under a prefix" } }));
  await settled(session);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

describe("nested at /harness", () => {
  for (const path of ["/harness/", "/harness"]) {
    test(`${path} loads the inspector, lists the sessions, and a click opens one in the page`, async () => {
      const { page, problems } = await newPage();
      const origin = new URL(server.url).origin;
      const response = await page.goto(`${origin}${path}`);
      expect(response?.status()).toBe(200);
      const item = page.locator(`li.session[data-session="${session}"]`);
      await expect.poll(() => item.count()).toBe(1);
      await item.locator("a").click();
      await page.waitForFunction(() => document.body.dataset.view !== undefined);
      await expect.poll(() => page.locator("#state").innerText()).toContain('"Hello from under a prefix"');
      // Still the same page at the same path: the link only changed the fragment.
      const url = new URL(page.url());
      expect(url.pathname).toBe(path);
      expect(url.hash).toContain(`session=${session}`);
      expect(problems).toEqual([]);
      await page.close();
    });
  }

  test("a new turn streams live into the open session", async () => {
    const { page, problems } = await newPage();
    const before = await settled(session);
    await page.goto(`${server.url}/#session=${session}`);
    await page.waitForFunction((n) => document.body.dataset.view === String(n), before.len);
    await page.locator("#input").fill("And live?");
    await page.locator("#input").press("Enter");
    const after = await until("the new turn to end", async () => {
      const s = await api<SessionDetail>(server.url, `sessions/${session}`);
      return s.len > before.len && s.status === "idle" && !s.runningHere ? s : undefined;
    });
    // The page followed over SSE (under /harness/) to the turn's end.
    await page.waitForFunction((n) => document.body.dataset.view === String(n), after.len);
    expect(await page.evaluate(() => document.body.dataset.live)).toBe("live");
    expect(await page.locator(".row.cursor .name").textContent()).toBe("workflow:completed");
    await expect.poll(() => page.locator("#state").innerText()).toContain('"And live?"');
    expect(problems).toEqual([]);
    await page.close();
  });
});
