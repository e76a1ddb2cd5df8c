/**
 * A Server-Sent Events parser over a `fetch` body (WHATWG HTML §9.2): `event:`, `id:`, `data:`
 * (joined with newlines), `retry:`, comments ignored, CRLF/LF/CR line ends, one leading BOM
 * stripped; an event is dispatched at a blank line, and one cut off by the end is dropped.
 */

/** One dispatched SSE message. */
export interface SseMessage {
  /** The `event:` field, `message` when absent. */
  event: string;
  /** The `data:` lines joined with `\n`. */
  data: string;
  /** The last-event-ID after this message (`id:` persists across messages), `""` if none. */
  id: string;
  /** A `retry:` reconnection time in ms, if this message carried one. */
  retry?: number;
}

/** Parses SSE text as it arrives, chunk by chunk. */
export class SseParser {
  private buffer = "";
  private started = false;
  private event = "";
  private data: string[] = [];
  private hasData = false;
  private lastId = "";
  private retry: number | undefined;
  /** The last `retry:` seen, in ms. */
  reconnectionTime: number | undefined;

  /** Feeds decoded text; returns the messages it completed. */
  push(text: string): SseMessage[] {
    if (!this.started) {
      if (text.length === 0) return [];
      this.started = true;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    this.buffer += text;
    const out: SseMessage[] = [];
    let start = 0;
    for (let i = 0; i < this.buffer.length; i++) {
      const c = this.buffer.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      // A CR at the very end may be followed by an LF in the next chunk: wait for it.
      if (c === 13 && i === this.buffer.length - 1) break;
      const line = this.buffer.slice(start, i);
      if (c === 13 && this.buffer.charCodeAt(i + 1) === 10) i++;
      start = i + 1;
      const message = this.line(line);
      if (message) out.push(message);
    }
    this.buffer = this.buffer.slice(start);
    return out;
  }

  private line(line: string): SseMessage | null {
    if (line === "") return this.dispatch();
    if (line.startsWith(":")) return null;
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    switch (field) {
      case "event":
        this.event = value;
        break;
      case "data":
        this.data.push(value);
        this.hasData = true;
        break;
      case "id":
        if (!value.includes("\0")) this.lastId = value;
        break;
      case "retry":
        if (/^\d+$/.test(value)) {
          this.retry = Number(value);
          this.reconnectionTime = this.retry;
        }
        break;
      default:
        break;
    }
    return null;
  }

  private dispatch(): SseMessage | null {
    const retry = this.retry;
    this.retry = undefined;
    if (!this.hasData) {
      this.event = "";
      return null;
    }
    const message: SseMessage = {
      event: this.event || "message",
      data: this.data.join("\n"),
      id: this.lastId,
    };
    if (retry !== undefined) message.retry = retry;
    this.event = "";
    this.data = [];
    this.hasData = false;
    return message;
  }
}

/** The SSE messages of a response body, as they arrive. */
export async function* readSse(
  body: ReadableStream<Uint8Array>,
  parser: SseParser = new SseParser(),
): AsyncGenerator<SseMessage, void, undefined> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      yield* parser.push(decoder.decode(value, { stream: true }));
    }
    yield* parser.push(decoder.decode());
  } finally {
    // Stop the download when the consumer stops early.
    reader.cancel().catch(() => {});
    reader.releaseLock();
  }
}
