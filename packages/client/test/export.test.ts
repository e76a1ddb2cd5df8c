/**
 * `exportJsonl`: the server's export of a session (`GET /sessions/{id}/export`) handed back as
 * the text it sent, byte for byte (a changed byte would break its hash chain). A fake `fetch`
 * records the request; the real server's answer is checked in client.test.ts.
 */
import { describe, expect, it } from "vitest";
import { OpenHarnessClient, OpenHarnessError } from "../src/index.js";

function answering(response: () => Response) {
  const seen: { url: string; method: string | undefined; accept: string | undefined; authorization: string | undefined }[] = [];
  const fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const headers = (init?.headers ?? {}) as Record<string, string>;
    seen.push({ url: String(input), method: init?.method, accept: headers.accept, authorization: headers.authorization });
    return response();
  }) as typeof globalThis.fetch;
  return { seen, fetch };
}

describe("exportJsonl", () => {
  it("asks for the session's JSONL and returns its text unchanged", async () => {
    const text =
      '{"session":"a b/ç","begin":true,"chain":"sha256"}\n' +
      '{"session":"a b/ç","seq":0,"id":"e0","name":"user:input","payload":{"text":"olá  \\u00e9"},"timestamp":"t","causedBy":null,"chain":"' +
      "ab".repeat(32) +
      '"}\n' +
      '{"session":"a b/ç","end":true,"count":1,"chain":"' +
      "ab".repeat(32) +
      '"}\n';
    const { seen, fetch } = answering(() => new Response(text, { headers: { "content-type": "application/x-ndjson" } }));
    const client = new OpenHarnessClient({ baseUrl: "http://h/harness", apiKey: "k", fetch });
    expect(await client.exportJsonl("a b/ç")).toBe(text);
    expect(seen).toEqual([
      { url: "http://h/harness/sessions/a%20b%2F%C3%A7/export", method: "GET", accept: "application/x-ndjson", authorization: "Bearer k" },
    ]);
  });

  it("a refusal is the server's error, code and message", async () => {
    const body = { error: { code: "missing_parent", message: "session f is forked from p, which is not in memory" } };
    const { fetch } = answering(() => new Response(JSON.stringify(body), { status: 409, headers: { "content-type": "application/json" } }));
    const refused = await new OpenHarnessClient({ baseUrl: "http://h", fetch }).exportJsonl("f").catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(OpenHarnessError);
    expect(refused).toMatchObject({ status: 409, code: "missing_parent", message: body.error.message });
  });
});
