/**
 * `apiKey` as a function: asked on every request and every stream connection, so a page that
 * learns the key after its first `401` keeps one client (the inspector does). A fake `fetch`
 * records the headers; no server is needed.
 */
import { describe, expect, it } from "vitest";
import { OpenHarnessClient, OpenHarnessError } from "../src/index.js";

function recording(answer: (url: string) => Response) {
  const seen: { url: string; authorization: string | undefined }[] = [];
  const fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const headers = (init?.headers ?? {}) as Record<string, string>;
    seen.push({ url: String(input), authorization: headers.authorization });
    return answer(String(input));
  }) as typeof globalThis.fetch;
  return { seen, fetch };
}

const json = (body: unknown, status = 200) =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });

describe("apiKey", () => {
  it("a function is asked on every request: none until it answers one", async () => {
    let key: string | null = null;
    const { seen, fetch } = recording(() => (key ? json({ sessions: [] }) : json({ error: { code: "unauthorized", message: "a key is needed" } }, 401)));
    const client = new OpenHarnessClient({ baseUrl: "http://127.0.0.1:1/harness/", apiKey: () => key, fetch });
    const refused = await client.listSessions().catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(OpenHarnessError);
    expect(refused).toMatchObject({ status: 401, code: "unauthorized" });
    key = "k1";
    await client.listSessions();
    key = "k2";
    await client.listSessions();
    expect(seen).toEqual([
      { url: "http://127.0.0.1:1/harness/sessions", authorization: undefined },
      { url: "http://127.0.0.1:1/harness/sessions", authorization: "Bearer k1" },
      { url: "http://127.0.0.1:1/harness/sessions", authorization: "Bearer k2" },
    ]);
  });

  it("a string is sent as before; a stream's connections ask the function too", async () => {
    const fixed = recording(() => json({ status: "ok" }));
    await new OpenHarnessClient({ baseUrl: "http://h", apiKey: "s", fetch: fixed.fetch }).health();
    expect(fixed.seen[0]?.authorization).toBe("Bearer s");

    const body = 'event: user:input\nid: 0\ndata: {"seq":0,"id":"e0","name":"user:input","payload":{},"timestamp":"t","causedBy":null}\n\n';
    const streamed = recording(() => new Response(body, { headers: { "content-type": "text/event-stream" } }));
    const client = new OpenHarnessClient({ baseUrl: "http://h", apiKey: () => "live", fetch: streamed.fetch });
    const events = [];
    for await (const event of client.streamEvents("s1", { until: () => true })) events.push(event.seq);
    expect(events).toEqual([0]);
    expect(streamed.seen).toEqual([{ url: "http://h/sessions/s1/events", authorization: "Bearer live" }]);
  });
});
