/**
 * A fake OpenAI Chat Completions server on 127.0.0.1 (streamed answers, as the real API sends
 * them) to be the model of a `/v1` agent in the tests of client-run tools: offered
 * `get_weather`, it calls it (until the tool's output is back), then says what the tool
 * returned; otherwise it answers a line of text. `agentWithFakeModel` registers it with a real
 * `openharness serve` through `/v1` (a provider, a model, an agent using it).
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface FakeModel {
  /** `http://127.0.0.1:<port>/v1` */
  baseUrl: string;
  /** How many requests it answered. */
  requests(): number;
  stop(): Promise<void>;
}

const chunk = (choices: unknown[], usage: unknown = null) =>
  `data: ${JSON.stringify({
    id: "chatcmpl-fake",
    object: "chat.completion.chunk",
    created: 1745678496,
    model: "gpt-fake",
    choices,
    usage,
  })}\n\n`;
const delta = (delta: unknown, finish: string | null = null) =>
  chunk([{ index: 0, delta, logprobs: null, finish_reason: finish }]);
const ending = (finish: string) => [
  delta({}, finish),
  chunk([], { prompt_tokens: 12, completion_tokens: 8, total_tokens: 20 }),
  "data: [DONE]\n\n",
];

/** The streamed chunks answering a Chat Completions request `body`. */
function answer(body: any): string[] {
  const messages: any[] = body.messages ?? [];
  const last = messages[messages.length - 1];
  const offered = (body.tools ?? []).some((tool: any) => tool.function?.name === "get_weather");
  if (offered && last?.role !== "tool") {
    const args = JSON.stringify({ location: "San Francisco, CA" });
    return [
      delta({ role: "assistant", content: null }),
      delta({ tool_calls: [{ index: 0, id: "call_weather_1", type: "function", function: { name: "get_weather", arguments: "" } }] }),
      delta({ tool_calls: [{ index: 0, function: { arguments: args } }] }),
      ...ending("tool_calls"),
    ];
  }
  const text = last?.role === "tool" ? `The tool says: ${last.content}` : "Hello from the agent.";
  return [delta({ role: "assistant", content: "" }), delta({ content: text }), ...ending("stop")];
}

export async function startFakeModel(): Promise<FakeModel> {
  let requests = 0;
  const server: Server = createServer((request, response) => {
    let raw = "";
    request.on("data", (piece) => (raw += piece));
    request.on("end", () => {
      requests += 1;
      let body: any = {};
      try {
        body = JSON.parse(raw);
      } catch {
        response.writeHead(400, { "content-type": "application/json" });
        response.end(JSON.stringify({ error: { message: "not JSON" } }));
        return;
      }
      response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      for (const piece of answer(body)) response.write(piece);
      response.end();
    });
  });
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests: () => requests,
    stop: () => new Promise((ok) => server.close(() => ok())),
  };
}

/** Registers `model` with the server at `base` and creates the agent `name` that uses it. */
export async function agentWithFakeModel(base: string, model: FakeModel, name: string): Promise<string> {
  const post = async (path: string, body: unknown) => {
    const response = await fetch(`${base}/v1${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    const answer: any = await response.json();
    if (response.status !== 201) throw new Error(`POST /v1${path}: ${response.status} ${JSON.stringify(answer)}`);
    return answer;
  };
  const provider = await post("/llm-providers", {
    name: `fake-openai-${name}`,
    provider_type: "openai",
    base_url: model.baseUrl,
    api_key: "sk-fake-0123456789",
  });
  const registered = await post(`/llm-providers/${provider.id}/models`, { model_id: "gpt-fake" });
  await post("/agents", { name, system_prompt: "Answer briefly.", default_model_id: registered.id });
  return `agent:${name}`;
}
