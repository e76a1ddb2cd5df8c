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
 */
import { describe, expect, inject, it } from "vitest";
import { OpenHarnessClient } from "@openharness/client";
import { APPROVAL_SESSIONS } from "../server.js";
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

for (const [index, [label, sdk, react, approvals]] of releases.entries()) {
  describe(`the AI SDK's Chat + DefaultChatTransport, ${label}`, () => {
    const chatOf = (options: { id?: string; messages?: unknown[] } = {}) =>
      new react.Chat({ ...options, transport: new sdk.DefaultChatTransport({ api: `${api}/api/chat` }) });

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
