/**
 * The official `openai` JavaScript SDK (6.30.1, the newest line that runs on Node 20; 7.x needs
 * Node 22), unmodified, against a real `openharness serve`'s Open Responses API
 * (`/v1/responses`): create, stream, continue by `previous_response_id` and from an older
 * response (a fork), read back whole and as a stream from every sequence number, and cancel a
 * running response; and, against a `/v1` agent whose model is a fake OpenAI server, function
 * tools the client runs: the response ends with a `function_call`, and the client's
 * `function_call_output` continues it. The Python SDK's fuller flow and the compliance cases run
 * in `crates/cli/tests/open_responses.rs`.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import OpenAI from "openai-6";
import { startServer, type RunningServer } from "../server.js";
import { agentWithFakeModel, startFakeModel, type FakeModel } from "../fake-model.js";

const api = inject("serverUrl");
const reply = (text: string, n: number) =>
  `(offline) You said "${text}"; that is message ${n} of our conversation.`;

/** The text of a response's message items (a stream's final response has no `output_text`). */
function text(response: OpenAI.Responses.Response): string {
  return response.output
    .flatMap((item) => (item.type === "message" ? item.content : []))
    .map((part) => (part.type === "output_text" ? part.text : ""))
    .join("");
}

function client(base: string): OpenAI {
  return new OpenAI({ baseURL: `${base}/v1`, apiKey: "unused", maxRetries: 0 });
}

describe("openai 6.30.1 (JavaScript)", () => {
  it("creates, streams, continues, forks and reads back", async () => {
    const openai = client(api);
    const first = await openai.responses.create({ model: "chat", input: "Hello there" });
    expect(first.status).toBe("completed");
    expect(first.output_text).toBe(reply("Hello there", 1));

    const stream = openai.responses.stream({ model: "chat", input: "Second", previous_response_id: first.id });
    const kinds: string[] = [];
    for await (const event of stream) kinds.push(event.type);
    const second = await stream.finalResponse();
    expect(kinds.slice(0, 2)).toEqual(["response.created", "response.in_progress"]);
    expect(kinds.at(-1)).toBe("response.completed");
    expect(text(second)).toBe(reply("Second", 2));
    expect(second.previous_response_id).toBe(first.id);

    // The first response again: the session has moved on, so the new response is a fork.
    const fork = await openai.responses.create({ model: "chat", input: "Another", previous_response_id: first.id });
    expect(fork.output_text).toBe(reply("Another", 2));
    expect(fork.conversation?.id).not.toBe(first.conversation?.id);

    const again = await openai.responses.retrieve(second.id);
    expect(again.output_text).toBe(text(second));
    const whole: unknown[] = [];
    for await (const event of await openai.responses.retrieve(second.id, { stream: true })) whole.push(event);
    expect(whole.map((e: any) => e.type)).toEqual(kinds);
    for (let after = 0; after < whole.length; after++) {
      const rest: unknown[] = [];
      for await (const event of await openai.responses.retrieve(second.id, { stream: true, starting_after: after })) {
        rest.push(event);
      }
      expect(rest).toEqual(whole.slice(after + 1));
    }
  });

  it("refuses an unknown model with a 404 naming the served ones", async () => {
    await expect(client(api).responses.create({ model: "nope", input: "Hi" })).rejects.toMatchObject({
      status: 404,
      message: expect.stringContaining("chat"),
    });
  });
});

describe("openai 6.30.1 on a slow model", () => {
  let slow: RunningServer;
  beforeAll(async () => {
    slow = await startServer({ scriptedDelayMs: 1500 });
  });
  afterAll(async () => {
    await slow?.stop();
  });

  it("cancels a running response as an event", async () => {
    const openai = client(slow.url);
    const running = await openai.responses.create({ model: "chat", input: "Take your time", background: true });
    expect(running.status).toBe("in_progress");
    const cancelled = await openai.responses.cancel(running.id);
    expect(cancelled.status).toBe("incomplete");
    expect(cancelled.incomplete_details?.reason).toBe("cancelled");
    const page = await (await fetch(`${slow.url}/sessions/${running.conversation!.id}/events?limit=1000`)).json();
    expect(page.events.map((e: any) => e.name)).toContain("stop:requested");
  });
});

describe("openai 6.30.1 with function tools (a /v1 agent)", () => {
  let model: FakeModel;
  let agent: string;
  beforeAll(async () => {
    model = await startFakeModel();
    agent = await agentWithFakeModel(api, model, "weather-openai-js");
  });
  afterAll(async () => {
    await model?.stop();
  });

  it("ends a response with a function_call and continues from the client's output", async () => {
    const openai = client(api);
    const tools: OpenAI.Responses.Tool[] = [
      {
        type: "function",
        name: "get_weather",
        description: "The current weather in a city.",
        parameters: { type: "object", properties: { location: { type: "string" } }, required: ["location"] },
        strict: false,
      },
    ];
    const first = await openai.responses.create({ model: agent, input: "What's the weather in San Francisco?", tools });
    expect(first.status).toBe("completed");
    const call = first.output.find((item) => item.type === "function_call");
    expect(call).toMatchObject({ type: "function_call", name: "get_weather", call_id: "call_weather_1" });
    if (call?.type !== "function_call") throw new Error("no function_call");
    expect(JSON.parse(call.arguments)).toEqual({ location: "San Francisco, CA" });

    const second = await openai.responses.create({
      model: agent,
      previous_response_id: first.id,
      input: [{ type: "function_call_output", call_id: call.call_id, output: "64 degrees and clear" }],
      tools,
    });
    expect(second.status).toBe("completed");
    expect(second.output_text).toBe("The tool says: 64 degrees and clear");
    // The same conversation, the output recorded on its input.
    expect(second.conversation?.id).toBe(first.conversation?.id);
    const page = await (await fetch(`${api}/sessions/${first.conversation!.id}/events?limit=100`)).json();
    const inputs = page.events.filter((e: any) => e.name === "user:input");
    expect(inputs[1].payload.toolResults).toEqual([{ toolId: "call_weather_1", output: "64 degrees and clear" }]);
  });
});
