/**
 * Following a session's events live: `GET /sessions/{id}/events` as SSE, read with `fetch`
 * streaming, resumed with `Last-Event-ID` after any drop, with exponential backoff, every
 * event delivered once and in order (the last seq is tracked, older ones are skipped).
 */
import { OpenHarnessError, StreamGaveUpError, errorFromResponse, networkError, parseErrorBody } from "./errors.js";
import { SseParser, readSse } from "./sse.js";
import type { Recorded } from "./types.js";

/** How a stream retries after a drop. */
export interface RetryOptions {
  /** The first wait, in ms (default: the server's `retry:` hint, else 500). */
  initialDelayMs?: number;
  /** The longest wait, in ms (default 10 000). */
  maxDelayMs?: number;
  /** Each failed attempt multiplies the wait by this (default 2). */
  factor?: number;
  /** Failed attempts in a row before giving up (default 8; `Infinity` never gives up). */
  maxAttempts?: number;
}

/** Where a live stream is. */
export type ConnectionState = "connecting" | "open" | "reconnecting" | "closed" | "gave-up";

/** What `onStatus` hears. */
export interface StreamStatus {
  state: ConnectionState;
  sessionId: string;
  /** The last seq delivered, `null` before any. */
  lastSeq: number | null;
  /** Failed attempts in a row (0 while connected). */
  attempt: number;
  /** The failure that made it reconnect or give up. */
  error?: OpenHarnessError;
  /** The wait before the next attempt, in ms (when reconnecting). */
  delayMs?: number;
}

/** Options of {@link OpenHarnessClient.streamEvents}. */
export interface StreamEventsOptions {
  /** Deliver events after this seq (the last one you have); absent: from the first event. */
  after?: number | null;
  /** Stop after the event for which this returns true (e.g. the end of a turn). */
  until?: (event: Recorded) => boolean;
  /** Stops the stream. */
  signal?: AbortSignal;
  retry?: RetryOptions;
  /**
   * Reconnect when nothing (not even a heartbeat) arrived for this long, in ms (default 45 000:
   * three of the server's 15 s heartbeats); 0 turns it off.
   */
  idleTimeoutMs?: number;
  /** Hears every change of connection state. */
  onStatus?: (status: StreamStatus) => void;
}

/** What the stream needs from the client. */
export interface StreamTransport {
  fetch: typeof fetch;
  url: string;
  /** The headers of each connection (a function: asked again on every reconnection). */
  headers: Record<string, string> | (() => Record<string, string>);
}

/**
 * A live stream of a session's events: iterate it with `for await`, or give callbacks to
 * {@link EventStream.forEach}. Ends when `until` matches, when closed, or throws a
 * {@link StreamGaveUpError} (reconnecting gave up) or an {@link OpenHarnessError} the server
 * answered that retrying cannot fix (404, 400, 401).
 */
export class EventStream implements AsyncIterable<Recorded> {
  readonly sessionId: string;
  private lastSeqValue: number | null;
  private stateValue: ConnectionState = "connecting";
  private readonly controller = new AbortController();
  private readonly options: StreamEventsOptions;
  private readonly transport: StreamTransport;
  private started = false;

  constructor(sessionId: string, transport: StreamTransport, options: StreamEventsOptions = {}) {
    this.sessionId = sessionId;
    this.transport = transport;
    this.options = options;
    this.lastSeqValue = options.after ?? null;
    const outer = options.signal;
    if (outer) {
      if (outer.aborted) this.controller.abort();
      else outer.addEventListener("abort", () => this.controller.abort(), { once: true });
    }
  }

  /** The last seq delivered (or the `after` it started from). */
  get lastSeq(): number | null {
    return this.lastSeqValue;
  }

  /** The connection's state. */
  get state(): ConnectionState {
    return this.stateValue;
  }

  /** Stops the stream; iteration ends without error. */
  close(): void {
    this.controller.abort();
  }

  [Symbol.asyncIterator](): AsyncIterator<Recorded> {
    if (this.started) throw new Error("an EventStream can be iterated once");
    this.started = true;
    return this.run();
  }

  /** Calls `onEvent` for each event; resolves when the stream ends, rejects as iteration throws. */
  async forEach(onEvent: (event: Recorded) => void): Promise<void> {
    for await (const event of this) onEvent(event);
  }

  private status(state: ConnectionState, extra: Partial<StreamStatus> = {}): void {
    this.stateValue = state;
    this.options.onStatus?.({
      state,
      sessionId: this.sessionId,
      lastSeq: this.lastSeqValue,
      attempt: 0,
      ...extra,
    });
  }

  private async *run(): AsyncGenerator<Recorded, void, undefined> {
    const retry = this.options.retry ?? {};
    const maxAttempts = retry.maxAttempts ?? 8;
    const factor = retry.factor ?? 2;
    const maxDelay = retry.maxDelayMs ?? 10_000;
    const idleTimeout = this.options.idleTimeoutMs ?? 45_000;
    const signal = this.controller.signal;
    let failures = 0;
    let hint: number | undefined;
    try {
      for (;;) {
        if (signal.aborted) return;
        this.status(failures === 0 ? "connecting" : "reconnecting", { attempt: failures });
        let failure: OpenHarnessError;
        try {
          const outcome = yield* this.connect(idleTimeout, (ms) => (hint = ms), () => {
            failures = 0;
          });
          if (outcome === "done") return;
          failure = new OpenHarnessError(0, "network", "the event stream ended");
        } catch (err) {
          if (signal.aborted) return;
          failure = err instanceof OpenHarnessError ? err : networkError(err);
          if (!failure.retryable) throw failure;
        }
        failures++;
        if (failures >= maxAttempts) {
          const gaveUp = new StreamGaveUpError(this.sessionId, this.lastSeqValue, failures, failure);
          this.status("gave-up", { attempt: failures, error: gaveUp });
          throw gaveUp;
        }
        const base = retry.initialDelayMs ?? hint ?? 500;
        const delayMs = Math.min(maxDelay, base * factor ** (failures - 1));
        this.status("reconnecting", { attempt: failures, error: failure, delayMs });
        await sleep(delayMs, signal);
      }
    } finally {
      this.controller.abort();
      if (this.stateValue !== "gave-up") this.status("closed");
    }
  }

  /** One connection: yields new events; "done" when `until` matched, "ended" when the body ended. */
  private async *connect(
    idleTimeout: number,
    onRetryHint: (ms: number) => void,
    onOpen: () => void,
  ): AsyncGenerator<Recorded, "done" | "ended", undefined> {
    const attempt = new AbortController();
    const stop = () => attempt.abort();
    this.controller.signal.addEventListener("abort", stop, { once: true });
    let idle: ReturnType<typeof setTimeout> | undefined;
    let timedOut = false;
    const touch = () => {
      if (idleTimeout <= 0) return;
      clearTimeout(idle);
      idle = setTimeout(() => {
        timedOut = true;
        attempt.abort();
      }, idleTimeout);
    };
    try {
      const base = typeof this.transport.headers === "function" ? this.transport.headers() : this.transport.headers;
      const headers: Record<string, string> = { ...base, accept: "text/event-stream" };
      if (this.lastSeqValue !== null) headers["last-event-id"] = String(this.lastSeqValue);
      touch();
      let response: Response;
      try {
        response = await this.transport.fetch(this.transport.url, {
          headers,
          signal: attempt.signal,
          cache: "no-store",
        });
      } catch (err) {
        throw networkError(err);
      }
      if (!response.ok) throw await errorFromResponse(response);
      if (!response.body || !(response.headers.get("content-type") ?? "").includes("text/event-stream")) {
        throw new OpenHarnessError(response.status, "bad_response", "the server did not answer an event stream");
      }
      this.status("open");
      onOpen();
      const parser = new SseParser();
      // Comments (heartbeats) reach no message: watch the raw bytes for the idle timer.
      const body = response.body.pipeThrough(
        new TransformStream<Uint8Array, Uint8Array>({
          transform(chunk, out) {
            touch();
            out.enqueue(chunk);
          },
        }),
      );
      try {
        for await (const message of readSse(body, parser)) {
          if (parser.reconnectionTime !== undefined) onRetryHint(parser.reconnectionTime);
          if (message.event === "error") {
            const parsed = parseErrorBody(message.data);
            throw new OpenHarnessError(0, parsed?.code ?? "stream_failed", parsed?.message ?? message.data);
          }
          let event: Recorded;
          try {
            event = JSON.parse(message.data) as Recorded;
          } catch (err) {
            throw new OpenHarnessError(0, "bad_response", `an event is not JSON: ${message.data.slice(0, 80)}`, {
              cause: err,
            });
          }
          if (typeof event.seq !== "number") continue;
          // Never twice: a resume may overlap what was delivered.
          if (this.lastSeqValue !== null && event.seq <= this.lastSeqValue) continue;
          this.lastSeqValue = event.seq;
          yield event;
          if (this.options.until?.(event)) return "done";
        }
      } catch (err) {
        if (err instanceof OpenHarnessError) throw err;
        if (timedOut) throw new OpenHarnessError(0, "network", `no data for ${idleTimeout} ms`);
        throw networkError(err);
      }
      if (timedOut) throw new OpenHarnessError(0, "network", `no data for ${idleTimeout} ms`);
      return "ended";
    } finally {
      clearTimeout(idle);
      this.controller.signal.removeEventListener("abort", stop);
      attempt.abort();
    }
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}
