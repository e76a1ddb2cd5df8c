/**
 * The server's pinned UI message streams (crates/server/tests/snapshots/chat__*.snap: text, a
 * tool call, a structured output, an error — the exact chunks `POST /api/chat` sends, as the
 * Rust tests assert) read by the unmodified default transport of the oldest AI SDK 5 release
 * (ai 5.0.0: strict chunk schemas, an unknown field fails) and the newest 5.x, then built into
 * a UIMessage by each one's readUIMessageStream.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import * as oldest from "ai-oldest";
import * as newest from "ai-newest";
import { repoRoot } from "../server.js";

const snapshots = join(repoRoot, "crates", "server", "tests", "snapshots");

/** The chunks of an insta snapshot (after its `---` header). */
function chunks(name: string): unknown[] {
  const text = readFileSync(join(snapshots, `chat__${name}.snap`), "utf8");
  return JSON.parse(text.split(/^---$/m).slice(2).join("---")) as unknown[];
}

/** The SSE body the server writes for these chunks (with the `id:` lines it adds). */
function body(list: unknown[]): string {
  return list.map((c, i) => `id: ${i}\ndata: ${typeof c === "string" ? c : JSON.stringify(c)}\n\n`).join("");
}

type Sdk = typeof oldest;

async function read(sdk: Sdk, list: unknown[]) {
  const transport = new sdk.DefaultChatTransport({
    api: "http://127.0.0.1/api/chat",
    fetch: async () =>
      new Response(body(list), {
        headers: { "content-type": "text/event-stream", "x-vercel-ai-ui-message-stream": "v1" },
      }),
  });
  const stream = await transport.sendMessages({
    chatId: "c",
    messages: [{ id: "m1", role: "user", parts: [{ type: "text", text: "weather?" }] }],
    abortSignal: undefined,
    trigger: "submit-message",
    messageId: undefined,
  });
  const errors: unknown[] = [];
  let last: { parts: { type: string }[] } | undefined;
  for await (const message of sdk.readUIMessageStream({ stream, onError: (e: unknown) => errors.push(e) })) {
    last = message as typeof last;
  }
  return { message: last, errors };
}

for (const [label, sdk] of [
  ["ai 5.0.0 (oldest, strict)", oldest],
  ["ai 5.0.277 (newest 5.x)", newest as unknown as Sdk],
] as const) {
  describe(label, () => {
    it("reads a text + tool + structured output turn", async () => {
      const { message, errors } = await read(sdk, chunks("text_tool_output"));
      expect(errors).toEqual([]);
      const parts = message!.parts as Record<string, unknown>[];
      expect(parts.map((p) => p.type)).toEqual(["step-start", "tool-weather", "text", "data-output"]);
      expect(parts[1]).toMatchObject({ toolCallId: "call_1", state: "output-available", input: { city: "Lisbon" }, output: { sky: "clear" } });
      expect(parts[2]).toMatchObject({ text: "It is sunny.", state: "done" });
      expect(parts[3]).toMatchObject({ data: { agent: "assistant", output: { reply: "Sunny." } } });
    });

    it("reads an error turn", async () => {
      const list = chunks("error");
      const { message, errors } = await read(sdk, list);
      // The `error` chunk reaches onError with the server's text; nothing fails validation.
      const errorText = (list.find((c) => (c as { type?: string }).type === "error") as { errorText: string }).errorText;
      expect(errors.map((e) => (e instanceof Error ? e.message : String(e)))).toEqual([errorText]);
      expect(message).toBeDefined();
    });
  });
}

it("the oldest release really is strict: a field it does not know fails the stream (newest accepts it)", async () => {
  const list = chunks("text_tool_output").map((c) =>
    typeof c === "object" && c !== null && (c as { type?: string }).type === "finish" ? { ...c, finishReason: "stop" } : c,
  );
  const strict = await read(oldest, list).catch((e: unknown) => ({ message: undefined, errors: [e] }));
  expect(strict.errors.length).toBeGreaterThan(0);
  expect(String(strict.errors[0])).toMatch(/finishReason|Unrecognized|validation/i);
  const loose = await read(newest as unknown as Sdk, list);
  expect(loose.errors).toEqual([]);
});
