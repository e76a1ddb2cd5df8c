/** The client against a real `openharness serve` (see ../../e2e/global-setup.ts). */
import { describe, expect, inject, it } from "vitest";
import {
  OpenHarnessClient,
  OpenHarnessError,
  StreamGaveUpError,
  deriveMessages,
  isTurnEnd,
  type ChatMessage,
  type Recorded,
  type StreamStatus,
  type UiMessage,
} from "../src/index.js";
import { WEATHER_CHAT } from "../../e2e/server.js";

const baseUrl = inject("serverUrl");
const client = new OpenHarnessClient({ baseUrl });

async function collect(stream: AsyncIterable<Recorded>): Promise<Recorded[]> {
  const out: Recorded[] = [];
  for await (const e of stream) out.push(e);
  return out;
}

/** A finished chat session: starts it and follows its first turn to the end. */
async function chatSession(text = "hello"): Promise<{ session: string; events: Recorded[] }> {
  const { session } = await client.createSession("chat", text);
  const events = await collect(client.followTurn(session));
  return { session, events };
}

describe("sessions over HTTP", () => {
  it("starts a session, follows its turn over SSE to its end, and reads it back", async () => {
    const { session, events } = await chatSession("hello there");
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i));
    expect(events.map((e) => e.name)).toEqual([
      "workflow:started",
      "user:input",
      "agent:started",
      "assistant:replied",
      "agent:completed",
      "workflow:completed",
    ]);
    const detail = await client.getSession(session);
    expect(detail).toMatchObject({ id: session, status: "idle", len: 6, workflow: "chat", runningHere: false });
    const listed = await client.listSessions();
    expect(listed.find((s) => s.id === session)?.len).toBe(6);
    const page = await client.events(session, { after: 2, limit: 2 });
    expect(page.events.map((e) => e.seq)).toEqual([3, 4]);
    expect(page.nextAfter).toBe(4);
    expect((await client.allEvents(session)).map((e) => e.id)).toEqual(events.map((e) => e.id));
  });

  it("exports a session as `openharness export` writes it: a hash-chained block", async () => {
    const jsonl = await client.exportJsonl(WEATHER_CHAT);
    expect(jsonl.endsWith("}\n")).toBe(true);
    const lines = jsonl.trimEnd().split("\n").map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines[0]).toEqual({ session: WEATHER_CHAT, begin: true, chain: "sha256" });
    const events = lines.slice(1, -1);
    expect(events.map((line) => line.id)).toEqual((await client.allEvents(WEATHER_CHAT)).map((e) => e.id));
    for (const line of events) expect(line.chain).toMatch(/^[0-9a-f]{64}$/);
    expect(new Set(events.map((line) => line.chain)).size).toBe(events.length);
    expect(lines[lines.length - 1]).toMatchObject({ session: WEATHER_CHAT, end: true, count: events.length, chain: events[events.length - 1]!.chain });
    await expect(client.exportJsonl("01a20000-0000-7000-8000-00000000dead")).rejects.toMatchObject({ status: 404, code: "not_found" });
  });

  it("queries the session list: search, filters, sort and pages", async () => {
    const marker = `zebra-${Date.now()}`;
    const first = await chatSession(`${marker} one`);
    const second = await chatSession(`${marker} two`);
    const found = await client.querySessions({ search: marker.toUpperCase(), sort: "newest" });
    expect(found.total).toBe(2);
    expect(found.sessions.map((s) => s.id)).toEqual([second.session, first.session]);
    expect(found.sessions[0]).toMatchObject({ title: `${marker} two`, agents: ["assistant"], openRequests: 0 });
    const paged = await client.querySessions({ search: marker, sort: "oldest", limit: 1 });
    expect(paged.sessions.map((s) => s.id)).toEqual([first.session]);
    const next = await client.querySessions({ search: marker, sort: "oldest", limit: 1, after: paged.nextAfter! });
    expect(next.sessions.map((s) => s.id)).toEqual([second.session]);
    expect(next.nextAfter).toBeNull();
    const none = await client.querySessions({ search: marker, status: ["waiting"], since: new Date(Date.now() - 60_000) });
    expect(none.total).toBe(0);
    const bad = await client.querySessions({ after: "nonsense" }).catch((error: unknown) => error);
    expect(bad).toBeInstanceOf(OpenHarnessError);
    expect((bad as OpenHarnessError).status).toBe(400);
  });

  it("annotates a session and a turn, reads the feedback back, and lists by annotation", async () => {
    const { session, events } = await chatSession(`feedback ${Date.now()}`);
    const label = `checked-${Date.now()}`;
    const recorded = await client.annotate(session, { by: "ana@example.com", thumbs: "down", labels: [label], note: "wrong city", turn: events.length });
    expect(recorded).toMatchObject({ by: "ana@example.com", thumbs: "down", labels: [label], note: "wrong city", turn: events.length });
    expect(typeof recorded.id).toBe("string");
    await client.annotate(session, { by: "bo", thumbs: "up" });
    const feedback = await client.feedback(session);
    expect(feedback.session).toBe(session);
    expect(feedback.annotations.map((a) => [a.by, a.thumbs])).toEqual([["ana@example.com", "down"], ["bo", "up"]]);
    expect(feedback.annotations[0]!.id).toBe(recorded.id);
    expect(feedback.scores).toEqual([]);
    const labelled = await client.querySessions({ label, annotated: true });
    expect(labelled.sessions.map((s) => s.id)).toEqual([session]);
    expect(labelled.sessions[0]!.annotations).toEqual({ count: 2, up: 1, down: 1, labels: [label] });
    const queue = await client.querySessions({ annotated: false, limit: 1000 });
    expect(queue.sessions.map((s) => s.id)).not.toContain(session);
    // No online scorer scores this server's sessions: a scorer's filter and sorts find none.
    expect((await client.querySessions({ scorer: "helpful", minScore: 0.5, maxScore: 1, sort: "lowestScore" })).total).toBe(0);
    await expect(client.querySessions({ minScore: 0.5 })).rejects.toMatchObject({ status: 400, code: "bad_request" });
    await expect(client.annotate(session, { by: "ana" })).rejects.toMatchObject({ status: 400, code: "bad_request" });
  });

  it("a second turn continues the session where it ended", async () => {
    const { session, events } = await chatSession("one");
    await client.sendInput(session, "two");
    const more = await collect(client.followTurn(session, { after: events.at(-1)!.seq }));
    expect(more[0]!.seq).toBe(events.length);
    expect(more.find((e) => e.name === "user:input")?.payload).toEqual({ text: "two" });
    const state = await client.stateAt(session);
    expect(state.state).toMatchObject({ exchanges: [{ user: "one" }, { user: "two" }] });
  });

  it("reads states at many positions in one request, diffs and messages at a position", async () => {
    const states = await client.statesAt(WEATHER_CHAT, [0, 2, 17, 24]);
    expect(states.map((s) => s.position)).toEqual([0, 2, 17, 24]);
    expect(states[0]!.state).toEqual({ exchanges: [] });
    expect(states[2]!.state).toEqual({ exchanges: [{ user: "What's the weather in Lisbon?", reply: "It is sunny." }] });
    const patch = await client.diff(WEATHER_CHAT, 14, 15);
    expect(patch).toEqual([{ op: "replace", path: "/exchanges/0/reply", value: "It is sunny." }]);
    const ui = await client.messages(WEATHER_CHAT, { at: 2, shape: "ui" });
    expect(ui.map((m) => m.role)).toEqual(["user"]);
    const v4 = await client.messages(WEATHER_CHAT);
    expect(v4.map((m) => m.content)).toEqual(["What's the weather in Lisbon?", "Checking the sky.It is sunny.", "And tomorrow?", "Probably sunny too."]);
    expect(v4[1]!.parts.at(-1)).toEqual({ type: "output", agent: "assistant", output: { reply: "It is sunny." } });
  });

  it("forks at a position into a new session that runs on", async () => {
    const { session } = await chatSession("fork me");
    const fork = await client.fork(session, { at: "position", position: 2 });
    expect(fork.session).not.toBe(session);
    const events = await collect(client.followTurn(fork.session));
    expect(events[0]!.name).toBe("session:forked");
    const detail = await client.getSession(fork.session);
    expect(detail.parent).toBe(session);
  });

  it("sends a fork's answer: at a point with no question open it is refused before anything is recorded", async () => {
    const { session } = await chatSession("no question here");
    const before = (await client.listSessions()).length;
    await expect(client.fork(session, { at: "position", position: 2 }, { answer: "yes" })).rejects.toMatchObject({ status: 409, code: "request_not_open" });
    await expect(client.fork(session, { at: "position", position: 2 }, { answer: { text: "yes", request: "not-an-id" } })).rejects.toMatchObject({ status: 400 });
    expect((await client.listSessions()).length).toBe(before);
  });

  it("forks with another input and compares the fork with its parent", async () => {
    const { session } = await chatSession("first question");
    const fork = await client.fork(session, { at: "position", position: 1 }, { input: "another question" });
    // Two turns: the fork's own run, then the input's; wait until the server runs neither.
    for (let i = 0; i < 200 && (await client.getSession(fork.session).catch(() => null))?.runningHere !== false; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const state = await client.stateAt(fork.session);
    expect(state.state).toMatchObject({ exchanges: [{ user: "another question" }] });
    const compared = await client.compare(session, fork.session);
    expect(compared.ancestor?.session).toBe(session);
    expect(compared.agree).toBe(1);
    // The fork runs on first (nothing to do at position 1: its run ends), then takes the input.
    expect(compared.divergence?.a?.name).toBe("user:input");
    expect(compared.divergence?.b?.name).toBe("workflow:completed");
  });

  it("answers an input request of the planner-executor", async () => {
    const { session } = await client.createSession("planner-executor", "ship it");
    const first = await collect(client.followTurn(session));
    const request = first.find((e) => e.name === "input:requested")!;
    expect(request.payload).toEqual({ prompt: "Publish the release? (yes/no)" });
    expect(first.at(-1)!.payload).toMatchObject({ reason: "waiting_for_input", openRequests: [request.id] });
    await client.answer(session, request.id, "yes");
    const second = await collect(client.followTurn(session, { after: first.at(-1)!.seq }));
    expect(second.find((e) => e.name === "input:received")?.payload).toEqual({ requestId: request.id, text: "yes" });
    // The request is answered now: answering again is a typed 409.
    const again = await client.answer(session, request.id, "no").catch((e: unknown) => e);
    expect(again).toBeInstanceOf(OpenHarnessError);
    expect(again).toMatchObject({ status: 409, code: "request_not_open" });
  });
});

describe("errors", () => {
  it("carries the server's status, code and message", async () => {
    const missing = "01a20000-0000-7000-8000-00000000dead";
    const err = await client.getSession(missing).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenHarnessError);
    expect(err).toMatchObject({ status: 404, code: "not_found", retryable: false });
    expect((err as Error).message).toContain(missing);
    await expect(client.createSession("no-such-workflow")).rejects.toMatchObject({ status: 404, code: "not_found" });
    await expect(client.statesAt(WEATHER_CHAT, [-1])).rejects.toMatchObject({ status: 400, code: "bad_request" });
    await expect(client.fork(WEATHER_CHAT, { at: "nth", name: "user:input", n: 0 })).rejects.toMatchObject({ code: "bad_request" });
  });

  it("a server that cannot be reached is a retryable network error", async () => {
    const nowhere = new OpenHarnessClient({ baseUrl: "http://127.0.0.1:9" });
    await expect(nowhere.health()).rejects.toMatchObject({ status: 0, code: "network", retryable: true });
  });

  it("a stream of an unknown session fails at once, without retrying", async () => {
    const statuses: StreamStatus[] = [];
    const stream = client.streamEvents("01a20000-0000-7000-8000-00000000beef", { onStatus: (s) => statuses.push(s) });
    await expect(collect(stream)).rejects.toMatchObject({ status: 404, code: "not_found" });
    expect(statuses.filter((s) => s.state === "reconnecting")).toEqual([]);
  });
});

/**
 * A fetch in front of the real server that cuts the nth event stream after `cuts[n]` SSE events
 * (its body then errors as a dropped connection does; streams past the list are not cut), and
 * records each stream request's Last-Event-ID.
 */
function cuttingFetch(cuts: number[], opts: { forgetLastEventId?: boolean } = {}) {
  const lastEventIds: (string | null)[] = [];
  const wrapped: typeof fetch = async (input, init) => {
    const headers = new Headers(init?.headers);
    if (headers.get("accept") !== "text/event-stream") return fetch(input, init);
    const cutAfter = cuts[lastEventIds.length] ?? Infinity;
    lastEventIds.push(headers.get("last-event-id"));
    if (opts.forgetLastEventId) headers.delete("last-event-id");
    const response = await fetch(input, { ...init, headers });
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let seen = 0;
    let pending = "";
    let cut = false;
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        // Erroring drops what is queued: cut on the pull after the last event was read.
        if (cut) {
          await reader.cancel();
          return controller.error(new TypeError("network connection lost"));
        }
        const { done, value } = await reader.read();
        if (done) return controller.close();
        pending += decoder.decode(value, { stream: true });
        const events = pending.split("\n\n");
        pending = events.pop()!;
        for (const e of events) {
          controller.enqueue(new TextEncoder().encode(`${e}\n\n`));
          if (/^data:/m.test(e) && ++seen >= cutAfter) {
            cut = true;
            return;
          }
        }
      },
      cancel: () => reader.cancel(),
    });
    return new Response(body, { status: response.status, headers: response.headers });
  };
  return { fetch: wrapped, lastEventIds };
}

describe("live streams", () => {
  it("resumes after drops with Last-Event-ID, every event once and in order", async () => {
    const { session, events } = await chatSession("resume me");
    const cut = cuttingFetch([2, 2]);
    const flaky = new OpenHarnessClient({ baseUrl, fetch: cut.fetch });
    const statuses: StreamStatus[] = [];
    const seen = await collect(
      flaky.streamEvents(session, { until: isTurnEnd, retry: { initialDelayMs: 5 }, onStatus: (s) => statuses.push(s) }),
    );
    expect(seen.map((e) => e.id)).toEqual(events.map((e) => e.id));
    // 6 events, 2 a connection: 3 connections, resuming after seq 1 and seq 3.
    expect(cut.lastEventIds).toEqual([null, "1", "3"]);
    expect(statuses.filter((s) => s.state === "reconnecting" && s.error).map((s) => s.lastSeq)).toEqual([1, 3]);
  });

  it("never delivers an event twice, even when the server replays from the start", async () => {
    const { session, events } = await chatSession("no duplicates");
    const cut = cuttingFetch([4], { forgetLastEventId: true });
    const flaky = new OpenHarnessClient({ baseUrl, fetch: cut.fetch });
    const seen = await collect(flaky.streamEvents(session, { until: isTurnEnd, retry: { initialDelayMs: 5 } }));
    expect(seen.map((e) => e.seq)).toEqual(events.map((e) => e.seq));
    expect(cut.lastEventIds).toEqual([null, "3"]);
  });

  it("backs off exponentially, then gives up keeping the session id and reporting it still running", async () => {
    const { session } = await chatSession("give up");
    let calls = 0;
    const first = cuttingFetch([3]);
    const failing: typeof fetch = async (input, init) => {
      if (new Headers(init?.headers).get("accept") === "text/event-stream" && calls++ > 0) {
        throw new TypeError("connection refused");
      }
      return first.fetch(input, init);
    };
    const statuses: StreamStatus[] = [];
    const flaky = new OpenHarnessClient({ baseUrl, fetch: failing });
    const stream = flaky.streamEvents(session, {
      retry: { initialDelayMs: 4, factor: 2, maxAttempts: 4 },
      onStatus: (s) => statuses.push(s),
    });
    const seen: Recorded[] = [];
    const err = await stream.forEach((e) => seen.push(e)).catch((e: unknown) => e);
    expect(seen.map((e) => e.seq)).toEqual([0, 1, 2]);
    expect(err).toBeInstanceOf(StreamGaveUpError);
    expect(err).toMatchObject({ sessionId: session, lastSeq: 2, attempts: 4, sessionStatus: "running", code: "stream_gave_up" });
    expect(statuses.filter((s) => s.delayMs !== undefined).map((s) => s.delayMs)).toEqual([4, 8, 16]);
    expect(statuses.at(-1)).toMatchObject({ state: "gave-up", sessionId: session, lastSeq: 2 });
    expect(stream.state).toBe("gave-up");
  });

  it("closing a live tail ends the iteration without error", async () => {
    const { session } = await chatSession("close");
    const stream = client.streamEvents(session);
    const seen: Recorded[] = [];
    for await (const e of stream) {
      seen.push(e);
      if (isTurnEnd(e)) stream.close();
    }
    expect(seen).toHaveLength(6);
    expect(stream.state).toBe("closed");
  });
});

/** The client-only parts (documented in src/messages.ts): the server's projection has none. */
const CLIENT_ONLY = new Set(["data-input-requested", "data-error"]);

/**
 * The derived messages without what only the client adds (its request and error parts, the
 * messages made only to hold one, and AI SDK 4's `content`). Every other part, `data-output`
 * included, is compared as it is.
 */
function comparable(messages: ChatMessage[]): unknown[] {
  return messages
    .filter((m) => m.metadata?.kind === undefined)
    .map((m) => {
      const out: Record<string, unknown> = {
        id: m.id,
        role: m.role,
        parts: m.parts.filter((p) => !CLIENT_ONLY.has(p.type)),
      };
      if (m.metadata?.agent !== undefined) out.metadata = { agent: m.metadata.agent };
      return out;
    });
}

describe("messages derived in the browser", () => {
  it("equal the server's UI messages at every position", async () => {
    const planner = await client.createSession("planner-executor", "derive");
    await collect(client.followTurn(planner.session));
    const chat = await chatSession("derive");
    for (const session of [WEATHER_CHAT, planner.session, chat.session]) {
      const events = await client.allEvents(session);
      for (let at = 0; at <= events.length; at++) {
        const server = await client.messages(session, { at, shape: "calls" });
        const derived = deriveMessages(events.slice(0, at));
        expect(comparable(derived), `${session} at ${at}`).toEqual(JSON.parse(JSON.stringify(server)) as UiMessage[]);
      }
      // The comparison covers structured outputs: the server's messages have them too.
      const outputs = (await client.messages(session, { shape: "calls" })).flatMap((m) => m.parts).filter((p) => p.type === "data-output");
      expect(outputs.length, session).toBeGreaterThan(0);
    }
  });

  it("add structured outputs, requests with their answers, ids from event ids", async () => {
    const events = await client.allEvents(WEATHER_CHAT);
    const messages = deriveMessages(events);
    expect(messages.map((m) => m.id)).toEqual([1, 2, 17, 18].map((seq) => `msg-${events[seq]!.id}`));
    expect(messages[1]!.parts.map((p) => p.type)).toEqual(["text", "tool-weather", "tool-forecast", "text", "data-output"]);
    expect(messages[1]!.parts[2]).toMatchObject({ state: "output-error", errorText: "the forecast service is down" });
    expect(messages[1]!.content).toBe("Checking the sky.It is sunny.");
    expect(messages[1]!.parts[4]).toEqual({ type: "data-output", data: { agent: "assistant", output: { reply: "It is sunny." } } });
    const { session } = await client.createSession("planner-executor", "ask me");
    const first = await collect(client.followTurn(session));
    const request = first.find((e) => e.name === "input:requested")!;
    const asked = deriveMessages(first).at(-1)!;
    expect(asked).toMatchObject({ id: `msg-${request.id}`, metadata: { kind: "input-request" } });
    expect(asked.parts).toEqual([
      { type: "data-input-requested", id: request.id, data: { requestId: request.id, prompt: "Publish the release? (yes/no)" } },
    ]);
    await client.answer(session, request.id, "no");
    await collect(client.followTurn(session, { after: first.at(-1)!.seq }));
    const answered = deriveMessages(await client.allEvents(session)).find((m) => m.id === asked.id)!;
    expect(answered.parts[0]).toMatchObject({ data: { answer: "no" } });
  });
});
