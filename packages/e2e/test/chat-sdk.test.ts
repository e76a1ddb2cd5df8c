/**
 * The AI SDK's own chat — `Chat` of @ai-sdk/react with the `DefaultChatTransport` of its `ai`,
 * unmodified — against a real `openharness serve` (`POST /api/chat`), in four releases: the
 * first AI SDK 5 (ai 5.0.0, strict chunk schemas), the newest 5.x, the newest 6.x and the
 * newest major (7.x). For each: the reply is a `text` part equal to the structured output's
 * reply field; the messages the server stores (`?shape=ui`) pass the SDK's own
 * `validateUIMessages` and equal the ones the SDK built from the stream, ids and `step-start`
 * included; `regenerate()` replaces the answer in both, and so does editing a message; a
 * message to a session waiting for a
 * person answers its request (the only way `useChat` can answer one). An approval request
 * (a fixture session, APPROVAL_SESSIONS) reaches the AI SDK 5 releases, which send no
 * `x-openharness-approvals` header, as `data-input-requested`, answered by a message; the
 * releases with tool approvals (6.x, 7.x) send the header, get a dynamic tool part waiting
 * for approval, and answer it with the SDK's own `addToolApprovalResponse` and
 * `sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses`.
 *
 * On a second server whose scripted model streams each reply slowly: two `sendMessage()` at
 * once are both answered, one turn each (the server queues the one it gets second as
 * `input:queued`); a `sendMessage()` while a reply streams is queued and answered after it;
 * and the SDK's `stop()` beside `POST /api/chat/{id}/stop` ends the turn for a second `Chat`
 * that follows it through `resumeStream()`, after which the chat goes on.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { OpenHarnessClient, type Recorded } from "@openharness/client";
import { APPROVAL_SESSIONS, startServer, type RunningServer } from "../server.js";
import * as ai5oldest from "ai-oldest";
import * as ai5newest from "ai-newest";
import * as ai6 from "ai-v6";
import * as ai7 from "ai-v7";
import * as react5oldest from "ai-sdk-react-oldest";
import * as react5newest from "ai-sdk-react-newest";
import * as react6 from "ai-sdk-react-v6";
import * as react7 from "ai-sdk-react-v7";

const api = inject("serverUrl");
const client = new OpenHarnessClient({ baseUrl: api });

type Part = {
  type: string;
  text?: string;
  data?: unknown;
  state?: string;
  toolName?: string;
  approval?: { id: string; approved?: boolean; reason?: string };
};
type Message = { id: string; role: string; parts: Part[] };
interface ChatLike {
  id: string;
  messages: Message[];
  status: string;
  error: Error | undefined;
  sendMessage(message: { text: string; metadata?: unknown; messageId?: string }): Promise<void>;
  regenerate(): Promise<void>;
  /** Reads the chat's running turn (`GET /api/chat/{id}/stream`), if any. */
  resumeStream(): Promise<void>;
  /** Aborts the fetch of the stream this Chat reads; nothing more. */
  stop(): Promise<void>;
  /** AI SDK 6+ only. */
  addToolApprovalResponse?(response: { id: string; approved: boolean; reason?: string }): Promise<void>;
}
type SendWhen = (options: { messages: unknown[] }) => boolean | PromiseLike<boolean>;
type Sdk = {
  DefaultChatTransport: new (options: { api: string; headers?: Record<string, string> }) => unknown;
  /** Absent in ai 5.0.0 (added in a later 5.x). */
  validateUIMessages?: (options: { messages: unknown[] }) => Promise<unknown>;
  /** AI SDK 6+ only. */
  lastAssistantMessageIsCompleteWithApprovalResponses?: SendWhen;
};
type React = {
  Chat: new (options: {
    id?: string;
    transport: unknown;
    messages?: unknown[];
    sendAutomaticallyWhen?: SendWhen;
  }) => ChatLike;
};

/** Each release: its label, its `ai` and `@ai-sdk/react`, and whether it has tool approvals. */
const releases: [string, Sdk, React, boolean][] = [
  ["ai 5.0.0 (the first 5.x)", ai5oldest as unknown as Sdk, react5oldest as unknown as React, false],
  ["ai 5.0.277 (the newest 5.x)", ai5newest as unknown as Sdk, react5newest as unknown as React, false],
  ["ai 6.0.325 (the newest 6.x)", ai6 as unknown as Sdk, react6 as unknown as React, true],
  ["ai 7.0.173 (the newest major)", ai7 as unknown as Sdk, react7 as unknown as React, true],
];

/** The header with which a client asks for approvals as the AI SDK's tool approvals. */
const TOOL_APPROVALS = { "x-openharness-approvals": "tool" };

/** What a JSON round trip keeps (the SDK's objects carry `undefined` fields). */
function plain<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

/** The SDK's own check of stored messages, where the release has one. */
async function validate(sdk: Sdk, options: { messages: unknown[] }): Promise<void> {
  if (sdk.validateUIMessages) await sdk.validateUIMessages(options);
}

function text(message: Message | undefined): string {
  return (message?.parts ?? []).filter((p) => p.type === "text").map((p) => p.text ?? "").join("");
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 15_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((ok) => setTimeout(ok, 50));
  }
}

/**
 * A second server whose scripted chat model streams each reply over SLOW_MS, so a second
 * message or a stop arrives while a turn runs (the suite's server answers at once).
 */
const SLOW_MS = 1500;
let slow: RunningServer;
let slowClient: OpenHarnessClient;

beforeAll(async () => {
  slow = await startServer({ scriptedDelayMs: SLOW_MS });
  slowClient = new OpenHarnessClient({ baseUrl: slow.url });
});

afterAll(async () => {
  await slow?.stop();
});

/** The names of `events`, for a readable failure. */
const names = (events: Recorded[]) => events.map((e) => `${e.seq} ${e.name}`);

/** The scripted chat's reply of each `agent:completed` with an output (an interrupted call has none), in order. */
function replies(events: Recorded[]): string[] {
  return events
    .filter((e) => e.name === "agent:completed" && (e.payload as { output?: unknown }).output !== undefined)
    .map((e) => (e.payload as { output: { reply: string } }).output.reply);
}

for (const [index, [label, sdk, react, approvals]] of releases.entries()) {
  describe(`the AI SDK's Chat + DefaultChatTransport, ${label}`, () => {
    const chatOf = (options: { id?: string; messages?: unknown[] } = {}, server: string = api) =>
      new react.Chat({ ...options, transport: new sdk.DefaultChatTransport({ api: `${server}/api/chat` }) });

    it("shows the reply as a text part; stored messages validate and equal the streamed ones; regenerate replaces the answer", async () => {
      const chat = chatOf();
      await chat.sendMessage({ text: "Hello from the SDK" });
      expect(chat.error).toBeUndefined();
      expect(chat.status).toBe("ready");
      expect(chat.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
      const events = await client.allEvents(chat.id);
      const completed = events.filter((e) => e.name === "agent:completed").at(-1)!;
      const reply = (completed.payload as { output: { reply: string } }).output.reply;
      expect(reply).toContain('You said "Hello from the SDK"');
      expect(text(chat.messages[1])).toBe(reply);
      expect(chat.messages[1]!.parts.map((p) => p.type)).toEqual(["step-start", "text", "data-output"]);

      const stored = (await client.messages(chat.id, { shape: "ui" })) as unknown as Message[];
      await validate(sdk, { messages: stored });
      expect(stored).toEqual(plain(chat.messages));
      // The user message kept the id the SDK gave it.
      expect(stored[0]!.id).toBe(chat.messages[0]!.id);

      const before = chat.messages[1]!.id;
      await chat.regenerate();
      expect(chat.error).toBeUndefined();
      expect(chat.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
      expect(chat.messages[1]!.id).not.toBe(before);
      expect(text(chat.messages[1])).toContain('You said "Hello from the SDK"');
      const regenerated = (await client.messages(chat.id, { shape: "ui" })) as unknown as Message[];
      await validate(sdk, { messages: regenerated });
      expect(regenerated).toEqual(plain(chat.messages));

      // Editing the first message (sendMessage with its id): the SDK and the stored view both
      // replace it and what followed it.
      await chat.sendMessage({ text: "Hello again, edited", messageId: chat.messages[0]!.id });
      expect(chat.error).toBeUndefined();
      expect(chat.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
      expect(text(chat.messages[0])).toBe("Hello again, edited");
      expect(text(chat.messages[1])).toContain('You said "Hello again, edited"');
      const edited = (await client.messages(chat.id, { shape: "ui" })) as unknown as Message[];
      await validate(sdk, { messages: edited });
      expect(edited).toEqual(plain(chat.messages));
    });

    it("answers a session waiting for a person with sendMessage", async () => {
      // The planner-executor asks whether to publish once its tasks are done.
      const { session } = await client.createSession("planner-executor", "Ship 1.0");
      const waiting = await until("the publish question", async () => {
        const summary = await client.getSession(session).catch(() => undefined);
        return summary?.status === "waiting" ? summary : undefined;
      });
      expect(waiting.status).toBe("waiting");
      const history = (await client.messages(session, { shape: "ui" })) as unknown as Message[];
      const asked = history.flatMap((m) => m.parts).find((p) => p.type === "data-input-requested");
      expect(asked?.data).toMatchObject({ prompt: expect.stringContaining("ublish") });

      const chat = chatOf({ id: session, messages: history });
      await chat.sendMessage({ text: "yes" });
      expect(chat.error).toBeUndefined();
      const after = await until("the session to end its turn", async () => {
        const summary = await client.getSession(session);
        return summary.status === "running" ? undefined : summary;
      });
      expect(after.status).toBe("idle");
      const events = await client.allEvents(session);
      expect(events.filter((e) => e.name === "input:received").map((e) => (e.payload as { text: string }).text)).toEqual(["yes"]);
      expect(events.map((e) => e.name)).toContain("release:published");
      expect(events.filter((e) => e.name === "user:input")).toHaveLength(1);
      const stored = (await client.messages(session, { shape: "ui" })) as unknown as Message[];
      await validate(sdk, { messages: stored });
      expect(stored).toEqual(plain(chat.messages));
    });

    it("two sendMessage() at once are both answered in order, with no error", async () => {
      // On the slow server, so the message the server gets second arrives while the first
      // turn runs: it is queued (`input:queued`, the default busy policy of /api/chat) and its
      // response stream waits for the turn that answers it.
      //
      // "In order" is the order in which the server received the two posts. The SDK's Chat
      // starts both fetches at once, on two connections; the server handles them
      // concurrently and takes each post's newest user message as its input, in the order
      // the posts reach it, so the second text is recorded first in about one run in five
      // (two raw `fetch` posts do the same). The test reads that order from the log and
      // requires everything else to follow from it; the next test sends the second message
      // once the first reply streams, where the order is fixed.
      const chat = chatOf({}, slow.url);
      const first = `first of two at once (${label})`;
      const second = `second of two at once (${label})`;
      const settledOrder: string[] = [];
      await Promise.all([
        chat.sendMessage({ text: first }).then(() => settledOrder.push(first)),
        chat.sendMessage({ text: second }).then(() => settledOrder.push(second)),
      ]);
      expect(chat.error).toBeUndefined();
      expect(chat.status).toBe("ready");

      const events = await slowClient.allEvents(chat.id);
      const log = names(events).join("\n");
      const inputs = events.filter((e) => e.name === "user:input");
      const received = inputs.map((e) => (e.payload as { text: string }).text);
      expect([...received].sort(), log).toEqual([first, second].sort());
      const [early, late] = received as [string, string];
      // The message received second was queued by the running first turn, and the second
      // turn is the answer to that queued input.
      const queued = events.filter((e) => e.name === "input:queued");
      expect(queued.map((e) => (e.payload as { text: string }).text), log).toEqual([late]);
      expect(inputs[1]!.causedBy).toBe(queued[0]!.id);
      // Each in its own turn, one after the other: input, (the other queued), reply, end.
      const completed = events.filter((e) => e.name === "workflow:completed");
      const answers = events.filter((e) => e.name === "agent:completed");
      expect(completed, log).toHaveLength(2);
      expect(answers, log).toHaveLength(2);
      const order = [inputs[0]!, queued[0]!, answers[0]!, completed[0]!, inputs[1]!, answers[1]!, completed[1]!].map((e) => e.seq);
      expect(order, log).toEqual([...order].sort((a, b) => a - b));
      expect(completed.map((e) => e.payload)).toEqual([expect.objectContaining({ reason: "idle" }), expect.objectContaining({ reason: "idle" })]);
      const [reply1, reply2] = replies(events) as [string, string];
      expect(reply1).toContain(`You said "${early}"`);
      expect(reply2).toContain(`You said "${late}"`);
      // Each sendMessage() read the turn that answers its own message: it settled when that
      // turn ended (the turns are SLOW_MS apart).
      expect(settledOrder).toEqual([early, late]);

      // The SDK's Chat pushes each user message when its sendMessage() runs (both before any
      // answer streams, in the order of the calls) and each assistant message when its own
      // stream writes its first chunk (the turns' order): user, user, assistant, assistant.
      // Every release does this (AbstractChat of ai 5.0.0, 5.0.277, 6.0.325 and 7.0.173; 7.x
      // queues on the client only with the opt-in `experimental_queue`, not set here). The
      // server's order is the conversation's: user, assistant, user, assistant (below).
      expect(chat.messages.map((m) => m.role)).toEqual(["user", "user", "assistant", "assistant"]);
      const users = chat.messages.filter((m) => m.role === "user");
      const assistants = chat.messages.filter((m) => m.role === "assistant");
      expect(users.map(text)).toEqual([first, second]);
      expect(assistants.map(text)).toEqual([reply1, reply2]);
      const started = events.filter((e) => e.name === "agent:started").map((e) => `msg-${e.id}`);
      expect(assistants.map((m) => m.id)).toEqual(started);

      const stored = (await slowClient.messages(chat.id, { shape: "ui" })) as unknown as Message[];
      await validate(sdk, { messages: stored });
      expect(stored.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant"]);
      expect(stored.map(text)).toEqual([early, reply1, late, reply2]);
      // The same messages as the SDK's, ids included, in the conversation's order.
      const userOf = (t: string) => users.find((m) => text(m) === t);
      expect(stored).toEqual(plain([userOf(early), assistants[0], userOf(late), assistants[1]]));
    });

    it("a sendMessage() while the reply streams is queued and answered after it, in order", async () => {
      // The second message is sent once the first reply is streaming (the user typed on):
      // its post surely comes second, and the running turn queues it.
      const chat = chatOf({}, slow.url);
      const first = `first, then one more (${label})`;
      const second = `one more while you answer (${label})`;
      const sending = chat.sendMessage({ text: first });
      await until("the first reply to stream", async () => (chat.status === "streaming" ? true : undefined));
      await Promise.all([sending, chat.sendMessage({ text: second })]);
      expect(chat.error).toBeUndefined();
      expect(chat.status).toBe("ready");

      const events = await slowClient.allEvents(chat.id);
      const log = names(events).join("\n");
      const inputs = events.filter((e) => e.name === "user:input");
      expect(inputs.map((e) => (e.payload as { text: string }).text), log).toEqual([first, second]);
      const queued = events.filter((e) => e.name === "input:queued");
      expect(queued.map((e) => (e.payload as { text: string }).text), log).toEqual([second]);
      expect(inputs[1]!.causedBy).toBe(queued[0]!.id);
      const completed = events.filter((e) => e.name === "workflow:completed");
      expect(completed, log).toHaveLength(2);
      // Queued while the first turn ran.
      expect(queued[0]!.seq).toBeGreaterThan(inputs[0]!.seq);
      expect(queued[0]!.seq).toBeLessThan(completed[0]!.seq);
      expect(completed[0]!.seq).toBeLessThan(inputs[1]!.seq);
      const [reply1, reply2] = replies(events) as [string, string];
      expect(reply1).toContain(`You said "${first}"`);
      expect(reply2).toContain(`You said "${second}"`);

      const stored = (await slowClient.messages(chat.id, { shape: "ui" })) as unknown as Message[];
      await validate(sdk, { messages: stored });
      expect(stored.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant"]);
      expect(stored.map(text)).toEqual([first, reply1, second, reply2]);
      if (index === 0) {
        // ai 5.0.0 shows the first answer twice: its stream writes go to "the last message if
        // it has the answer's id, else a new one", and once the second user message is last,
        // the first answer's next chunk pushes it again, after that user message, and streams
        // on there. The copy left before it (same id) is the answer as far as it had come
        // when the second message was sent. Later releases replace the message of that id
        // wherever it is (findLastIndex).
        expect(chat.messages.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant", "assistant"]);
        expect(chat.messages[1]!.id).toBe(chat.messages[3]!.id);
        expect(text(chat.messages[3])).toBe(reply1);
        expect(reply1.startsWith(text(chat.messages[1]))).toBe(true);
        expect(stored).toEqual(plain([0, 3, 2, 4].map((i) => chat.messages[i])));
      } else {
        // The SDK's order is the conversation's, as stored.
        expect(stored).toEqual(plain(chat.messages));
      }
    });

    it("stop() on a resumed stream ends the turn for every reader", async () => {
      // A sends on the slow server; B, the same chat opened elsewhere (a reload, another
      // tab: its history from the server), follows the running turn through
      // `GET /api/chat/{id}/stream`.
      const a = chatOf({}, slow.url);
      const said = `stop me (${label})`;
      const sending = a.sendMessage({ text: said });
      // Once the reply has begun, so B's history holds part of it (what a reload mid-answer
      // gets).
      await until("the reply to begin", async () => {
        const events = await slowClient.allEvents(a.id).catch(() => []);
        return events.some((e) => e.name === "text:delta") ? true : undefined;
      });
      const history = (await slowClient.messages(a.id, { shape: "ui" })) as unknown as Message[];
      expect(history.map((m) => m.role)).toEqual(["user", "assistant"]);
      const b = chatOf({ id: a.id, messages: history }, slow.url);
      const resuming = b.resumeStream();
      // B reads the running turn (its first chunks came): it follows it, not a 204.
      await until("B to read the running turn", async () => (b.status === "streaming" ? true : undefined));
      expect((await slowClient.allEvents(a.id)).map((e) => e.name)).not.toContain("workflow:completed");

      // The documented pattern: the SDK's stop() (closes A's own fetch) and the stop route.
      await a.stop();
      const stopped = await fetch(`${slow.url}/api/chat/${a.id}/stop`, { method: "POST" });
      expect(stopped.status).toBe(200);
      expect(await stopped.json()).toEqual({ cancelled: true });
      await sending;
      expect(a.error).toBeUndefined();
      expect(a.status).toBe("ready");

      // B's stream ends with the turn, without an error.
      await resuming;
      expect(b.error).toBeUndefined();
      expect(b.status).toBe("ready");

      const events = await slowClient.allEvents(a.id);
      const log = names(events).join("\n");
      const stop = events.findIndex((e) => e.name === "stop:requested");
      const end = events.findIndex((e) => e.name === "workflow:completed");
      expect(stop, log).toBeGreaterThanOrEqual(0);
      expect(end, log).toBeGreaterThan(stop);
      expect(events[end]!.payload).toMatchObject({ reason: "cancelled" });
      // Stopped before the scripted reply was done: the call was interrupted, nothing replied.
      const call = events.find((e) => e.name === "agent:completed");
      expect(call?.payload, log).toMatchObject({ outcome: "interrupted" });
      expect(events.map((e) => e.name)).not.toContain("assistant:replied");

      // B shows what the turn recorded: the user's message and the assistant message the
      // turn began (msg-<agent:started id>), its text as far as it got.
      const stored = (await slowClient.messages(a.id, { shape: "ui" })) as unknown as Message[];
      const started = events.find((e) => e.name === "agent:started")!;
      expect(stored.map((m) => m.role)).toEqual(["user", "assistant"]);
      expect(stored[1]!.id).toBe(`msg-${started.id}`);
      expect(b.messages.map((m) => m.id)).toEqual(stored.map((m) => m.id));
      if (index === 0) {
        // ai 5.0.0 resumes into its copy of the history's last message: the text that copy
        // already held when B opened the chat is there twice, then the rest once.
        const held = text(history[1]);
        expect(text(b.messages[0])).toBe(text(stored[0]));
        expect(text(b.messages[1])).toBe(held + text(stored[1]));
      } else {
        expect(b.messages.map(text)).toEqual(stored.map(text));
      }
      expect(`(offline) You said "${said}"; that is message 1 of our conversation.`.startsWith(text(stored[1]))).toBe(true);
      if (index > 0) {
        expect(plain(b.messages)).toEqual(stored);
      }
      // (ai 5.0.0 resumes into its copy of the history's last message, so when that already
      // held the turn's `step-start`, the replay adds a second one too.)

      // The chat goes on: a new message on it is answered normally.
      const next = `after the stop (${label})`;
      await a.sendMessage({ text: next });
      expect(a.error).toBeUndefined();
      expect(a.status).toBe("ready");
      expect(text(a.messages.at(-1))).toContain(`You said "${next}"`);
      const after = await slowClient.allEvents(a.id);
      const ends = after.filter((e) => e.name === "workflow:completed");
      expect(ends.map((e) => (e.payload as { reason: string }).reason)).toEqual(["cancelled", "idle"]);
      expect(replies(after)).toEqual([text(a.messages.at(-1))]);
      const final = (await slowClient.messages(a.id, { shape: "ui" })) as unknown as Message[];
      await validate(sdk, { messages: final });
      expect(final.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant"]);
      expect(final.at(-1)).toEqual(plain(a.messages.at(-1)));
    });
    /** The session's status once its turn has ended. */
    const settled = (session: string) =>
      until("the session to end its turn", async () => {
        const summary = await client.getSession(session);
        return summary.status === "running" ? undefined : summary;
      });

    const session = APPROVAL_SESSIONS[index]!;
    if (!approvals) {
      it("gets an approval request as data-input-requested without the header, and sendMessage answers it", async () => {
        const history = (await client.messages(session, { shape: "ui" })) as unknown as Message[];
        await validate(sdk, { messages: history });
        const parts = history.flatMap((m) => m.parts);
        const asked = parts.find((p) => p.type === "data-input-requested");
        expect(asked?.data).toMatchObject({ prompt: "Publish the release? (yes/no)" });
        expect(parts.map((p) => p.type)).not.toContain("dynamic-tool");

        const chat = chatOf({ id: session, messages: history });
        await chat.sendMessage({ text: "yes" });
        expect(chat.error).toBeUndefined();
        expect((await settled(session)).status).toBe("idle");
        const events = await client.allEvents(session);
        const answers = events.filter((e) => e.name === "input:received");
        expect(answers.map((e) => e.payload)).toEqual([
          expect.objectContaining({ text: "yes", requestId: (asked!.data as { requestId: string }).requestId }),
        ]);
        expect(answers[0]!.payload).not.toHaveProperty("approved");
        expect(events.map((e) => e.name)).toContain("release:published");
        const stored = (await client.messages(session, { shape: "ui" })) as unknown as Message[];
        await validate(sdk, { messages: stored });
        expect(stored).toEqual(plain(chat.messages));
      });
    } else {
      it("with the header, shows an approval as a tool approval that addToolApprovalResponse answers", async () => {
        const history = (await client.messages(session, { shape: "ui", approvals: "tool" })) as unknown as Message[];
        await validate(sdk, { messages: history });
        const parts = history.flatMap((m) => m.parts);
        expect(parts.map((p) => p.type)).not.toContain("data-input-requested");
        const asked = parts.find((p) => p.type === "dynamic-tool");
        expect(asked).toMatchObject({
          toolName: "approval",
          state: "approval-requested",
          input: { prompt: "Publish the release? (yes/no)" },
        });
        const id = asked!.approval!.id;

        const chat = new react.Chat({
          id: session,
          messages: history,
          transport: new sdk.DefaultChatTransport({ api: `${api}/api/chat`, headers: TOOL_APPROVALS }),
          sendAutomaticallyWhen: sdk.lastAssistantMessageIsCompleteWithApprovalResponses,
        });
        await chat.addToolApprovalResponse!({ id, approved: true, reason: "the tests pass" });
        // The SDK posts the chat by itself once every approval of the last step is answered.
        const answered = await until("the approval's turn to stream", async () => {
          const part = chat.messages.at(-1)?.parts.find((p) => p.type === "dynamic-tool");
          return chat.status === "ready" && part?.state === "output-available" ? part : undefined;
        });
        expect(chat.error).toBeUndefined();
        expect(answered).toMatchObject({
          approval: { id, approved: true, reason: "the tests pass" },
          output: { answer: "yes" },
        });
        // The answer continued the assistant message: no new message on either side.
        expect(chat.messages.map((m) => m.id)).toEqual(history.map((m) => m.id));

        expect((await settled(session)).status).toBe("idle");
        const events = await client.allEvents(session);
        const answers = events.filter((e) => e.name === "input:received").map((e) => e.payload);
        expect(answers).toEqual([{ requestId: id, text: "yes", approved: true, reason: "the tests pass" }]);
        expect(events.map((e) => e.name)).toContain("release:published");
        expect(events.filter((e) => e.name === "user:input")).toHaveLength(1);

        const stored = (await client.messages(session, { shape: "ui", approvals: "tool" })) as unknown as Message[];
        await validate(sdk, { messages: stored });
        expect(stored).toEqual(plain(chat.messages));
      });
    }
  });
}
