/**
 * AG-UI's own client — `HttpAgent` of `@ag-ui/client` 1.0.0, unmodified — against a real
 * `openharness serve` (`POST /ag-ui/{workflow}`): a run's reply becomes the agent's message and
 * its state follows the server's (a snapshot, then JSON Patch deltas the client applies), a
 * second run continues the thread, the planner-executor's question ends a run with an
 * interrupt that `runAgent({ resume })` answers, a connection the network drops mid-reply is
 * rejoined by running the same `runId` again (the message ends whole, never doubled), and the
 * stop route ends a run with outcome `cancelled` — each checked against the log. The README's
 * AG-UI snippet runs as written, but for the address. The last 0.x client (0.0.59, which sends no
 * `protocolVersion` and has no `cancelled` outcome) runs a turn, answers an interrupt and sees a
 * stopped run end without an outcome, `CUSTOM openharness.cancelled` before it.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { HttpAgent, type BaseEvent } from "ag-ui-client-1";
import { HttpAgent as HttpAgent0 } from "ag-ui-client-0";
import { repoRoot, startServer, type RunningServer } from "../server.js";
import { agentWithFakeModel, startFakeModel, type FakeModel } from "../fake-model.js";

const api = inject("serverUrl");

/** A fresh thread of `workflow` on `base`, its events collected. */
function agent(base: string, workflow: string, init: { fetch?: typeof fetch } = {}) {
  const threadId = crypto.randomUUID();
  const agent = new HttpAgent({ url: `${base}/ag-ui/${workflow}`, threadId, ...init });
  const events: BaseEvent[] = [];
  agent.subscribe({ onEvent: ({ event }) => void events.push(event) });
  return { agent, threadId, events };
}

async function json(url: string): Promise<any> {
  const response = await fetch(url);
  expect(response.ok, `${url}: ${response.status}`).toBe(true);
  return response.json();
}

const reply = (text: string, n: number) =>
  `(offline) You said "${text}"; that is message ${n} of our conversation.`;

describe("AG-UI HttpAgent 1.0.0", () => {
  it("runs a turn, follows the state, and continues the thread", async () => {
    const { agent: chat, threadId, events } = agent(api, "chat");
    chat.addMessage({ id: "u1", role: "user", content: "Hello from AG-UI" });
    const first = await chat.runAgent({ runId: "run-1" });
    expect(first.newMessages.map((m) => m.content)).toEqual([reply("Hello from AG-UI", 1)]);
    const kinds = events.map((e) => e.type);
    expect(kinds.slice(0, 2)).toEqual(["RUN_STARTED", "STATE_SNAPSHOT"]);
    expect(kinds).toContain("STATE_DELTA");
    expect(kinds.slice(-2)).toEqual(["MESSAGES_SNAPSHOT", "RUN_FINISHED"]);
    // The state the client built from the snapshot and deltas is the server's.
    const served = await json(`${api}/sessions/${threadId}/state`);
    expect(chat.state).toEqual(served.state);

    chat.addMessage({ id: "u2", role: "user", content: "And again" });
    await chat.runAgent({ runId: "run-2" });
    expect(chat.messages.map((m) => [m.role, m.content])).toEqual([
      ["user", "Hello from AG-UI"],
      ["assistant", reply("Hello from AG-UI", 1)],
      ["user", "And again"],
      ["assistant", reply("And again", 2)],
    ]);
    expect(chat.state).toEqual((await json(`${api}/sessions/${threadId}/state`)).state);
    // Each run is recorded with its runId, its message id and the protocol that started it.
    const page = await json(`${api}/sessions/${threadId}/events?limit=1000`);
    const inputs = page.events.filter((e: any) => e.name === "user:input").map((e: any) => e.payload);
    expect(inputs.map((p: any) => [p.runId, p.messageId, p.via])).toEqual([
      ["run-1", "u1", "ag-ui"],
      ["run-2", "u2", "ag-ui"],
    ]);
  });

  it("ends a run with the question as an interrupt, and resume answers it", async () => {
    const { agent: planner, threadId } = agent(api, "planner-executor");
    planner.addMessage({ id: "u1", role: "user", content: "Ship the docs" });
    await planner.runAgent({ runId: "p-1" });
    expect(planner.pendingInterrupts).toHaveLength(1);
    const interrupt = planner.pendingInterrupts[0]!;
    expect(interrupt.message).toContain("Publish");
    await planner.runAgent({
      runId: "p-2",
      resume: [{ interruptId: interrupt.id, status: "resolved", payload: { text: "yes" } }],
    });
    expect(planner.pendingInterrupts).toEqual([]);
    expect((planner.state as any).release).toBe("published");
    const page = await json(`${api}/sessions/${threadId}/events?limit=1000`);
    const answer = page.events.find((e: any) => e.name === "input:received");
    expect(answer.payload).toMatchObject({ requestId: interrupt.id, text: "yes", runId: "p-2" });
  });
});

describe("the README's AG-UI snippet", () => {
  it("runs as written against the server", () => {
    const readme = readFileSync(join(repoRoot, "README.md"), "utf8");
    const section = readme.slice(readme.indexOf("### AG-UI"));
    const open = section.indexOf("```ts\n") + "```ts\n".length;
    const snippet = section.slice(open, section.indexOf("```", open));
    // The client this suite pins, by its file (the snippet names the package as users install it).
    const entry = createRequire(import.meta.url).resolve("ag-ui-client-1").replace(/index\.js$/, "index.mjs");
    const script = snippet
      .replace("http://127.0.0.1:8080", api)
      .replace('"@ag-ui/client"', JSON.stringify(pathToFileURL(entry).href));
    const dir = mkdtempSync(join(tmpdir(), "openharness-ag-ui-"));
    try {
      writeFileSync(join(dir, "snippet.mjs"), script);
      const run = spawnSync(process.execPath, [join(dir, "snippet.mjs")], { encoding: "utf8", timeout: 30_000 });
      expect(run.status, run.stderr).toBe(0);
      expect(run.stdout).toContain(reply("Three days in Lisbon: where do I start?", 1));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("AG-UI HttpAgent 1.0.0 on a slow model", () => {
  let slow: RunningServer;
  beforeAll(async () => {
    slow = await startServer({ scriptedDelayMs: 1500 });
  });
  afterAll(async () => {
    await slow?.stop();
  });

  it("rejoins a run whose connection dropped by running its runId again", async () => {
    let drop = true;
    // The network drops the first connection after a few chunks (the client is unmodified:
    // this is its documented `fetch` option).
    const dropping: typeof fetch = async (url, init) => {
      if (!drop) return fetch(url, init);
      drop = false;
      const network = new AbortController();
      const response = await fetch(url, { ...init, signal: network.signal });
      let chunks = 0;
      const counting = new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, out) {
          out.enqueue(chunk);
          if (++chunks === 5) network.abort();
        },
      });
      return new Response(response.body!.pipeThrough(counting), {
        status: response.status,
        headers: response.headers,
      });
    };
    const { agent: chat, threadId } = agent(slow.url, "chat", { fetch: dropping });
    chat.addMessage({ id: "u1", role: "user", content: "Cut me off" });
    await chat.runAgent({ runId: "cut-1" }).catch(() => undefined);
    const partial = chat.messages.at(-1)?.content ?? "";
    expect(partial.length).toBeLessThan(reply("Cut me off", 1).length);
    await chat.runAgent({ runId: "cut-1" });
    expect(chat.messages.map((m) => [m.role, m.content])).toEqual([
      ["user", "Cut me off"],
      ["assistant", reply("Cut me off", 1)],
    ]);
    // Rejoining recorded nothing: one input, one reply.
    const page = await json(`${slow.url}/sessions/${threadId}/events?limit=1000`);
    expect(page.events.filter((e: any) => e.name === "user:input")).toHaveLength(1);
    expect(chat.state).toEqual((await json(`${slow.url}/sessions/${threadId}/state`)).state);
  });

  it("ends a stopped run with outcome cancelled", async () => {
    const { agent: chat, threadId, events } = agent(slow.url, "chat");
    chat.addMessage({ id: "u1", role: "user", content: "Take your time" });
    const running = chat.runAgent({ runId: "stop-1" });
    // Once the reply streams, stop the turn as an event.
    while (!events.some((e) => e.type === "TEXT_MESSAGE_CONTENT")) {
      await new Promise((r) => setTimeout(r, 20));
    }
    const stopped = await fetch(`${slow.url}/ag-ui/chat/${threadId}/stop`, { method: "POST" });
    expect(await stopped.json()).toEqual({ cancelled: true });
    await running;
    const finished = events.at(-1) as any;
    expect(finished.type).toBe("RUN_FINISHED");
    expect(finished.outcome).toEqual({ type: "cancelled" });
    const page = await json(`${slow.url}/sessions/${threadId}/events?limit=1000`);
    expect(page.events.map((e: any) => e.name)).toContain("stop:requested");
  });
});

describe("AG-UI HttpAgent 0.0.59 (before protocol 1.0)", () => {
  let slow: RunningServer;
  beforeAll(async () => {
    slow = await startServer({ scriptedDelayMs: 1500 });
  });
  afterAll(async () => {
    await slow?.stop();
  });

  it("runs a turn and answers an interrupt", async () => {
    const chat = new HttpAgent0({ url: `${api}/ag-ui/chat`, threadId: crypto.randomUUID() });
    chat.addMessage({ id: "u1", role: "user", content: "Hello from 0.x" });
    const { newMessages } = await chat.runAgent({ runId: "old-1" });
    expect(newMessages.map((m) => m.content)).toEqual([reply("Hello from 0.x", 1)]);
    const planner = new HttpAgent0({ url: `${api}/ag-ui/planner-executor`, threadId: crypto.randomUUID() });
    planner.addMessage({ id: "u1", role: "user", content: "Ship the docs" });
    await planner.runAgent({ runId: "old-p1" });
    const interrupt = planner.pendingInterrupts[0]!;
    await planner.runAgent({
      runId: "old-p2",
      resume: [{ interruptId: interrupt.id, status: "resolved", payload: { text: "yes" } }],
    });
    expect((planner.state as any).release).toBe("published");
  });

  it("sees a stopped run end without the outcome it cannot read", async () => {
    const threadId = crypto.randomUUID();
    const chat = new HttpAgent0({ url: `${slow.url}/ag-ui/chat`, threadId });
    const events: any[] = [];
    chat.subscribe({ onEvent: ({ event }) => void events.push(event) });
    chat.addMessage({ id: "u1", role: "user", content: "Take your time" });
    const running = chat.runAgent({ runId: "old-stop" });
    while (!events.some((e) => e.type === "TEXT_MESSAGE_CONTENT")) {
      await new Promise((r) => setTimeout(r, 20));
    }
    await fetch(`${slow.url}/ag-ui/chat/${threadId}/stop`, { method: "POST" });
    await running;
    const [custom, finished] = events.slice(-2);
    expect(custom).toMatchObject({ type: "CUSTOM", name: "openharness.cancelled" });
    expect(finished.type).toBe("RUN_FINISHED");
    expect(finished.outcome).toBeUndefined();
  });
});

describe("AG-UI HttpAgent 1.0.0 with frontend tools (a /v1 agent)", () => {
  let model: FakeModel;
  let target: string;
  beforeAll(async () => {
    model = await startFakeModel();
    target = await agentWithFakeModel(api, model, "weather-ag-ui");
  });
  afterAll(async () => {
    await model?.stop();
  });

  it("runs a frontend tool on the client and continues the thread from its result", async () => {
    const { agent: weather, events } = agent(api, target);
    const tools = [
      {
        name: "get_weather",
        description: "The current weather in a city.",
        parameters: { type: "object", properties: { location: { type: "string" } } },
      },
    ];
    weather.addMessage({ id: "u1", role: "user", content: "What's the weather in San Francisco?" });
    await weather.runAgent({ runId: "run-1", tools });
    const start = events.find((e) => e.type === "TOOL_CALL_START") as any;
    expect(start).toMatchObject({ toolCallName: "get_weather", toolCallId: "call_weather_1" });
    expect(events.some((e) => e.type === "TOOL_CALL_RESULT")).toBe(false);
    expect(events.at(-1)?.type).toBe("RUN_FINISHED");

    // The app runs the tool and gives the agent its result.
    weather.addMessage({ id: "t1", role: "tool", toolCallId: start.toolCallId, content: "64 degrees and clear" });
    await weather.runAgent({ runId: "run-2", tools });
    const last = weather.messages.at(-1);
    expect([last?.role, last?.content]).toEqual(["assistant", "The tool says: 64 degrees and clear"]);
    expect(weather.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant"]);
  });
});
