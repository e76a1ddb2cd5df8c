// A fork with another model from the page, in Debian's chromium against a real `openharness
// serve --fork-provider other=openai:…@<url>`: the URL is a stand-in for an OpenAI-compatible
// model endpoint on 127.0.0.1 (answering Chat Completions as a stream, as protocols.md §2.1
// describes). The fork form offers the server's providers; the fork runs its turn with the
// chosen one (the endpoint is asked, with its model), the parent keeps its own.

import { type Server, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import type { Recorded, SessionDetail } from "@openharness/client";
import { type Served, api, idle, serve, until } from "./serve";

const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
const REPLY = "Hello from the other model";

let model: Server;
const asked: { model: string }[] = [];
let server: Served;
let browser: Browser;

/** A streamed Chat Completions answer whose text is `text`. */
function completion(text: string): string {
  const chunk = (choices: unknown, usage: unknown = null) =>
    `data: ${JSON.stringify({ id: "chatcmpl-1", object: "chat.completion.chunk", created: 1745678496, model: "other-model", choices, usage })}\n\n`;
  return [
    chunk([{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }]),
    chunk([{ index: 0, delta: { content: text }, finish_reason: null }]),
    chunk([{ index: 0, delta: {}, finish_reason: "stop" }]),
    chunk([], { prompt_tokens: 40, completion_tokens: 9, total_tokens: 49 }),
    "data: [DONE]\n\n",
  ].join("");
}

beforeAll(async () => {
  model = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk: Buffer) => (body += chunk.toString()));
    request.on("end", () => {
      if (request.method !== "POST" || request.url !== "/v1/chat/completions") {
        response.writeHead(404).end();
        return;
      }
      asked.push(JSON.parse(body) as { model: string });
      response.writeHead(200, { "content-type": "text/event-stream" });
      response.end(completion(JSON.stringify({ reply: REPLY })));
    });
  });
  await new Promise<void>((resolve) => model.listen(0, "127.0.0.1", resolve));
  const port = (model.address() as AddressInfo).port;
  server = await serve({ args: ["--fork-provider", `other=openai:other-model@http://127.0.0.1:${port}/v1`] });
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox"] });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  model?.close();
});

const settled = (session: string): Promise<SessionDetail> => idle<SessionDetail>(server.url, session);

test("the fork form offers the server's providers; a fork with one runs its turn with that model", async () => {
  expect(await api(server.url, "providers")).toEqual({ providers: [{ name: "other" }] });
  const { session } = await api<{ session: string }>(server.url, "sessions", { method: "POST", body: { workflow: "chat", input: "Hello" } });
  const parent = await settled(session);
  const page = await browser.newPage({ viewport: { width: 1440, height: 860 } });
  const problems: string[] = [];
  page.on("pageerror", (error) => problems.push(error.message));
  await page.goto(`${server.url}/#session=${session}`);
  await page.waitForFunction((len) => document.body.dataset.view === String(len), parent.len);
  await page.locator('.tab[data-tab="forks"]').click();
  const select = page.locator("#fork-provider");
  await expect.poll(() => select.isVisible()).toBe(true);
  expect(await select.locator("option").allTextContents()).toEqual(["with the workflow's own model", "with other"]);
  await select.selectOption("other");
  await page.locator("#fork-input").fill("Hi again");
  await page.locator("#fork-form button[type=submit]").click();
  const fork = await until("the fork to open", async () => {
    const hash = new URLSearchParams(new URL(page.url()).hash.slice(1)).get("session");
    return hash && hash !== session ? hash : undefined;
  });
  await until("the fork's turn with the other model", async () => {
    const { events } = await api<{ events: Recorded[] }>(server.url, `sessions/${fork}/events?limit=1000`);
    const summary = await api<SessionDetail>(server.url, `sessions/${fork}`);
    return events.some((e) => e.name === "user:input") && summary.status !== "running" && !summary.runningHere ? events : undefined;
  });
  // The other model was asked, by name, and its answer is the fork's reply; the parent's
  // reply is its own model's.
  expect(asked.map((request) => request.model)).toEqual(["other-model"]);
  const state = await api<{ state: { exchanges: { user: string; reply: string | null }[] } }>(server.url, `sessions/${fork}/state`);
  expect(state.state.exchanges.at(-1)).toEqual({ user: "Hi again", reply: REPLY });
  const parentState = await api<{ state: { exchanges: { reply: string | null }[] } }>(server.url, `sessions/${session}/state`);
  expect(parentState.state.exchanges.map((e) => e.reply)).not.toContain(REPLY);
  expect(problems).toEqual([]);
  await page.close();
}, 60_000);
