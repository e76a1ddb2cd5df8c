/**
 * End to end in Debian's chromium (playwright-core), against a real `openharness serve`: the
 * React quick start's WorkflowChat (a chat round trip with the scripted model, then the tape
 * stepping back state and messages), and the unmodified `useChat` of @ai-sdk/react — the
 * oldest AI SDK 5 release (2.0.0 / ai 5.0.0, strict chunk schemas), the newest 5.x, the newest
 * 6.x (3.0.328 / ai 6.0.325) and the newest major (4.0.177 / ai 7.0.173) — on
 * `/api/chat` with its own chat ids (serve --chat-workflow chat), resume on mount included, and
 * the resume of a turn still running (a second server whose scripted models are slow). Screenshots go to target/screenshots/ (ignored; `npm run screenshots` copies them to docs/).
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { OpenHarnessClient } from "@openharness/client";
import { bundlePages, launchChromium, servePages, type PageServer } from "../browser.js";
import { screenshotsDir, startServer, type RunningServer } from "../server.js";

const api = inject("serverUrl");
const client = new OpenHarnessClient({ baseUrl: api });
const screenshots = screenshotsDir;

let browser: Browser;
let pages: PageServer;

beforeAll(async () => {
  const bundles = await bundlePages(["chat", "usechat-oldest", "usechat-newest", "usechat-v6", "usechat-v7"]);
  pages = await servePages(bundles, api);
  browser = await launchChromium();
  mkdirSync(screenshots, { recursive: true });
});

afterAll(async () => {
  await browser?.close();
  await pages?.close();
});

/** A new page that fails the test on any uncaught error. */
async function open(path: string, from: PageServer = pages): Promise<{ page: Page; errors: string[] }> {
  const page = await browser.newPage({ viewport: { width: 900, height: 760 } });
  const errors: string[] = [];
  page.on("pageerror", (err) => errors.push(err.message));
  page.on("console", (msg) => {
    if (msg.type() === "error") errors.push(msg.text());
  });
  await page.goto(`${from.url}${path}`);
  return { page, errors };
}

/**
 * Waits until the page has no request in flight. With `resume: true`, useChat asks on mount
 * whether its chat has a running turn (`GET /api/chat/{id}/stream`, 204 for a new chat); when
 * that answer lands after a send, useChat sets its status back to `ready` while the sent turn
 * still streams. A user takes longer than that to type; a test waits for it.
 */
async function settled(page: Page): Promise<void> {
  await page.waitForLoadState("networkidle");
}

describe("WorkflowChat (the React quick start) in chromium", () => {
  it("chats with the scripted model, then steps back: state and messages go back too", async () => {
    const { page, errors } = await open("/chat.html");
    const summary = page.getByTestId("summary");
    await expect.poll(() => summary.textContent()).toBe("ready · 0 answered at position 0 of 0");

    await page.getByTestId("oh-input").fill("Hello from chromium");
    await page.getByTestId("oh-send").click();
    await expect.poll(() => summary.textContent()).toBe("ready · 1 answered at position 6 of 6");
    const messages = page.getByTestId("oh-message");
    await expect.poll(() => messages.count()).toBe(2);
    expect(await messages.nth(1).textContent()).toContain('You said "Hello from chromium"; that is message 1');

    await page.getByTestId("oh-input").fill("And a second one");
    await page.keyboard.press("Enter");
    await expect.poll(() => summary.textContent()).toBe("ready · 2 answered at position 11 of 11");
    await expect.poll(() => messages.count()).toBe(4);
    expect(await messages.nth(3).textContent()).toContain('You said "And a second one"; that is message 2');
    await expect.poll(() => page.getByTestId("oh-state").textContent()).toContain("And a second one");
    await page.screenshot({ path: join(screenshots, "chat.png"), fullPage: true });

    // Three steps back: before the second reply was recorded (user:input and agent:started only).
    const back = page.getByRole("button", { name: "Step back" });
    for (let i = 0; i < 3; i++) await back.click();
    await expect.poll(() => summary.textContent()).toBe("ready · 1 answered at position 8 of 11");
    expect(await page.getByTestId("oh-mode").textContent()).toBe("replaying");
    expect(await messages.count()).toBe(4);
    expect(await messages.nth(3).textContent()).not.toContain("You said");
    await expect
      .poll(async () => JSON.parse((await page.getByTestId("oh-state").textContent()) ?? "null"))
      .toMatchObject({ exchanges: [{ user: "Hello from chromium" }, { user: "And a second one", reply: null }] });

    // Five more: before the second message; the chat shows one exchange.
    for (let i = 0; i < 5; i++) await back.click();
    await expect.poll(() => summary.textContent()).toBe("ready · 0 answered at position 3 of 11");
    expect(await messages.count()).toBe(2);
    await page.screenshot({ path: join(screenshots, "chat-step-back.png"), fullPage: true });

    // States came from the batched route: a few requests for eleven positions, none for messages.
    const states = pages.proxied.filter((r) => r.includes("/states?"));
    expect(states.length).toBeGreaterThan(0);
    expect(states.length).toBeLessThanOrEqual(6);
    expect(pages.proxied.filter((r) => r.includes("/messages"))).toEqual([]);

    // Back to live.
    await page.getByRole("button", { name: "Live" }).click();
    await expect.poll(() => summary.textContent()).toBe("ready · 2 answered at position 11 of 11");
    expect(await page.getByTestId("oh-mode").textContent()).toBe("live");
    expect(errors).toEqual([]);
    await page.close();
  });
});

// After a resume that finds no running turn (204), ai 5.0.0 leaves `status` at "submitted" (its
// makeRequest returns before setting "ready"; later 5.x releases fix it): that is the SDK's, and
// sending still works.
for (const [entry, version, afterEmptyResume] of [
  ["usechat-oldest", "2.0.0", "submitted"],
  ["usechat-newest", "2.0.280", "ready"],
  ["usechat-v6", "3.0.328", "ready"],
  ["usechat-v7", "4.0.177", "ready"],
] as const) {
  describe(`the unmodified useChat of @ai-sdk/react ${version} on /api/chat`, () => {
    it("sends with its own chat id (serve --chat-workflow chat), reads the UI message stream without a validation error, and resumes on load", async () => {
      // No id given: useChat makes one, and its first message starts a session of that id
      // running the `chat` workflow (the server has two; --chat-workflow names the one).
      const { page, errors } = await open(`/${entry}.html`);
      const chatId = page.getByTestId("chat-id");
      await expect.poll(async () => ((await chatId.textContent()) ?? "").length).toBeGreaterThan(0);
      const session = (await chatId.textContent())!;
      // resume: true asks for the running turn on mount; none runs: 204, nothing to show.
      await expect.poll(() => pages.proxied.includes(`GET /api/chat/${session}/stream`)).toBe(true);
      await expect.poll(() => page.getByTestId("status").textContent()).toBe(afterEmptyResume);
      await expect(client.getSession(session)).rejects.toMatchObject({ status: 404 });

      await page.getByTestId("input").fill("Hi useChat");
      await page.getByRole("button", { name: "Send" }).click();
      await expect.poll(() => page.getByTestId("message").count()).toBe(2);
      await expect.poll(() => page.getByTestId("status").textContent()).toBe("ready");
      expect(await page.getByTestId("error").count()).toBe(0);
      const reply = page.getByTestId("message").nth(1);
      expect(await reply.getAttribute("data-role")).toBe("assistant");
      expect(await reply.locator('[data-part="data-output"]').textContent()).toContain('You said \\"Hi useChat\\"; that is message 1');
      // The AI SDK docs' page renders `part.text`: the reply is a text part, not only data.
      expect(await reply.locator('[data-part="text"]').textContent()).toBe('(offline) You said "Hi useChat"; that is message 1 of our conversation.');
      expect(await client.getSession(session)).toMatchObject({ id: session, workflow: "chat" });

      // The same chat id continues the same session.
      await page.getByTestId("input").fill("Once more");
      await page.getByRole("button", { name: "Send" }).click();
      await expect.poll(() => page.getByTestId("message").count()).toBe(4);
      await expect.poll(() => page.getByTestId("status").textContent()).toBe("ready");
      expect(await page.getByTestId("message").nth(3).textContent()).toContain("that is message 2");
      const events = await client.allEvents(session);
      const inputs = events.filter((e) => e.name === "user:input").map((e) => e.payload as { text: string; messageId: string });
      expect(inputs.map((p) => p.text)).toEqual(["Hi useChat", "Once more"]);
      // The user messages are recorded under the ids useChat gave them.
      expect(inputs.map((p) => p.messageId)).toEqual([
        await page.getByTestId("message").nth(0).getAttribute("data-id"),
        await page.getByTestId("message").nth(2).getAttribute("data-id"),
      ]);

      // Reopening the chat resumes: the stream route is asked again and answers 204 (the turn is over).
      const asked = pages.proxied.filter((r) => r === `GET /api/chat/${session}/stream`).length;
      await page.goto(`${pages.url}/${entry}.html?id=${session}`);
      await expect.poll(() => pages.proxied.filter((r) => r === `GET /api/chat/${session}/stream`).length).toBe(asked + 1);
      await expect.poll(() => page.getByTestId("status").textContent()).toBe(afterEmptyResume);
      expect(await chatId.textContent()).toBe(session);
      expect(await page.getByTestId("error").count()).toBe(0);
      expect(errors).toEqual([]);
      await page.close();
    });
  });
}

describe("the unmodified useChat resumes a running turn (a slow scripted model)", () => {
  // A second server whose scripted models wait SLOW_MS per answer, so a page can be reloaded
  // while the turn runs (the suite's server answers at once).
  const SLOW_MS = 3000;
  let slow: RunningServer;
  let slowPages: PageServer;
  let slowClient: OpenHarnessClient;

  beforeAll(async () => {
    slow = await startServer({ scriptedDelayMs: SLOW_MS });
    slowClient = new OpenHarnessClient({ baseUrl: slow.url });
    slowPages = await servePages(await bundlePages(["usechat-oldest", "usechat-newest", "usechat-v6", "usechat-v7"]), slow.url);
  });

  afterAll(async () => {
    await slowPages?.close();
    await slow?.stop();
  });

  for (const [entry, version] of [
    ["usechat-oldest", "2.0.0"],
    ["usechat-newest", "2.0.280"],
    ["usechat-v6", "3.0.328"],
    ["usechat-v7", "4.0.177"],
  ] as const) {
    it(`@ai-sdk/react ${version}: the docs' page (it renders part.text) shows the reply while it streams`, async () => {
      const { page, errors } = await open(`/${entry}.html`, slowPages);
      const chatId = page.getByTestId("chat-id");
      await expect.poll(async () => ((await chatId.textContent()) ?? "").length).toBeGreaterThan(0);
      await settled(page);
      await page.getByTestId("input").fill("Stream to me");
      await page.getByRole("button", { name: "Send" }).click();
      const full = '(offline) You said "Stream to me"; that is message 1 of our conversation.';
      const text = page.getByTestId("message").nth(1).locator('[data-part="text"]');
      // Part of the reply is on the page before the rest of it has arrived: never JSON.
      await expect
        .poll(async () => ((await text.count()) > 0 ? ((await text.first().textContent()) ?? "") : ""), { interval: 50, timeout: 15_000 })
        .toMatch(/^\(offline\) You said/);
      const partial = (await text.first().textContent()) ?? "";
      expect(partial.length).toBeLessThan(full.length);
      expect(full.startsWith(partial)).toBe(true);
      await expect.poll(() => page.getByTestId("status").textContent(), { timeout: 15_000 }).toBe("ready");
      expect(await text.first().textContent()).toBe(full);
      expect(errors).toEqual([]);
      await page.close();
    });

    it(`@ai-sdk/react ${version}: a reload while the turn runs resumes its stream — the output arrives once, status ends ready`, async () => {
      const { page, errors } = await open(`/${entry}.html`, slowPages);
      const chatId = page.getByTestId("chat-id");
      await expect.poll(async () => ((await chatId.textContent()) ?? "").length).toBeGreaterThan(0);
      await settled(page);
      const session = (await chatId.textContent())!;
      await page.getByTestId("input").fill("Hi while you think");
      const sent = Date.now();
      await page.getByRole("button", { name: "Send" }).click();
      // The turn runs: its agent call has started and the model is still "thinking".
      await expect
        .poll(async () => (await slowClient.allEvents(session).catch(() => [])).map((e) => e.name), { interval: 50 })
        .toContain("agent:started");
      expect(await page.getByTestId("status").textContent()).not.toBe("ready");

      // Reload as an app would: the chat id from the URL, its messages so far from the server,
      // and useChat's resume: true asks for the running turn.
      const resumed = page.waitForResponse((r) => r.url().endsWith(`/api/chat/${session}/stream`));
      await page.goto(`${slowPages.url}/${entry}.html?id=${session}&history=1`);
      const answer = await resumed;
      // 200: the turn still ran when the page asked (a 204 would mean the reload came too late
      // and the test proved nothing).
      expect(answer.status(), "the resume found the turn running").toBe(200);
      const reloadedAfter = Date.now() - sent;
      expect(reloadedAfter).toBeLessThan(SLOW_MS);
      expect((await slowClient.allEvents(session)).map((e) => e.name)).not.toContain("agent:completed");

      await expect.poll(() => page.getByTestId("status").textContent(), { timeout: 15_000 }).toBe("ready");
      const messages = page.getByTestId("message");
      // Exactly the user's message and ONE assistant message: the resumed stream continued the
      // assistant message the history already had (same id, msg-<agent:started id>) instead
      // of adding a second one.
      await expect.poll(() => messages.count()).toBe(2);
      expect(await messages.nth(0).getAttribute("data-role")).toBe("user");
      expect(await messages.nth(0).textContent()).toBe("Hi while you think");
      const reply = messages.nth(1);
      expect(await reply.getAttribute("data-role")).toBe("assistant");
      const events = await slowClient.allEvents(session);
      const started = events.find((e) => e.name === "agent:started")!;
      expect(await reply.getAttribute("data-id")).toBe(`msg-${started.id}`);
      const outputs = reply.locator('[data-part="data-output"]');
      expect(await outputs.count()).toBe(1);
      expect(await outputs.textContent()).toContain('You said \\"Hi while you think\\"; that is message 1');
      expect(await page.getByTestId("error").count()).toBe(0);
      // The server's messages agree: one turn, one reply.
      const server = await slowClient.messages(session, { shape: "ui" });
      expect(server.map((m) => m.id)).toEqual([await messages.nth(0).getAttribute("data-id"), `msg-${started.id}`]);
      expect(errors).toEqual([]);
      await page.close();
    });
  }
});
