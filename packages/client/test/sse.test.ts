import { describe, expect, it } from "vitest";
import { SseParser, readSse } from "../src/sse.js";

function all(chunks: string[]) {
  const parser = new SseParser();
  return chunks.flatMap((c) => parser.push(c));
}

describe("SseParser", () => {
  it("reads event, id and data fields and dispatches at a blank line", () => {
    expect(all(["event: user:input\nid: 3\ndata: {\"a\":1}\n\n"])).toEqual([
      { event: "user:input", id: "3", data: '{"a":1}' },
    ]);
  });

  it("joins data lines, keeps the id across events, defaults the type to message", () => {
    expect(all(["id: 7\ndata: a\ndata: b\n\ndata: c\n\n"])).toEqual([
      { event: "message", id: "7", data: "a\nb" },
      { event: "message", id: "7", data: "c" },
    ]);
  });

  it("handles CRLF, CR, a BOM, comments and fields split across chunks", () => {
    expect(all(["\uFEFF: heartbeat\r\nev", "ent: x\rda", "ta: 1\r", "\n\r\n", "data:2\n", "\n"])).toEqual([
      { event: "x", id: "", data: "1" },
      { event: "message", id: "", data: "2" },
    ]);
  });

  it("takes retry hints of digits only and ignores events without data", () => {
    const parser = new SseParser();
    expect(parser.push("retry: 1000\n: openharness\n\nretry: 5x\nevent: lonely\n\ndata: d\n\n")).toEqual([
      { event: "message", id: "", data: "d" },
    ]);
    expect(parser.reconnectionTime).toBe(1000);
  });

  it("drops an event cut off by the end of the stream", async () => {
    const bytes = new TextEncoder().encode("data: whole\n\ndata: cut");
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(bytes.slice(0, 5));
        c.enqueue(bytes.slice(5));
        c.close();
      },
    });
    const seen = [];
    for await (const m of readSse(body)) seen.push(m.data);
    expect(seen).toEqual(["whole"]);
  });

  it("decodes UTF-8 split inside a character", async () => {
    const bytes = new TextEncoder().encode("data: été\n\n");
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        for (const b of bytes) c.enqueue(new Uint8Array([b]));
        c.close();
      },
    });
    const seen = [];
    for await (const m of readSse(body)) seen.push(m.data);
    expect(seen).toEqual(["été"]);
  });
});
