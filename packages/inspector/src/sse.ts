// Live follow: a session's events as SSE, read with fetch (so the API key goes in a header and
// the server's named events — `event: <name>` — are all seen), resumed after a drop with
// `Last-Event-ID` so no event is lost or repeated.

import { type Api, type Recorded, refusal } from "./api";

export interface Follow {
  stop(): void;
}

export interface FollowHandlers {
  onEvent(event: Recorded): void;
  onStatus(status: "connecting" | "live" | "retrying" | "stopped", detail?: string): void;
}

/** Follows `session` from the event after seq `after` (-1: from the start) until stopped. */
export function follow(api: Api, session: string, after: number, handlers: FollowHandlers): Follow {
  const abort = new AbortController();
  let last = after;
  let stopped = false;

  const run = async (): Promise<void> => {
    let delay = 500;
    while (!stopped) {
      handlers.onStatus("connecting");
      try {
        const headers = api.headers({ accept: "text/event-stream" });
        if (last >= 0) headers["last-event-id"] = String(last);
        const response = await fetch(api.url(`sessions/${encodeURIComponent(session)}/events`), {
          headers,
          signal: abort.signal,
          cache: "no-store",
        });
        if (!response.ok || !response.body) {
          const error = await refusal(response, api);
          if (response.status === 401 || response.status === 404) {
            handlers.onStatus("stopped", error.message);
            return;
          }
          throw error;
        }
        handlers.onStatus("live");
        delay = 500;
        await read(response.body, (event) => {
          if (event.seq > last) {
            last = event.seq;
            handlers.onEvent(event);
          }
        });
      } catch (error) {
        if (stopped || abort.signal.aborted) break;
        handlers.onStatus("retrying", error instanceof Error ? error.message : String(error));
      }
      if (stopped) break;
      await sleep(delay, abort.signal);
      delay = Math.min(delay * 2, 8000);
    }
    handlers.onStatus("stopped");
  };
  void run();
  return {
    stop() {
      stopped = true;
      abort.abort();
    },
  };
}

async function read(body: ReadableStream<Uint8Array>, onEvent: (event: Recorded) => void): Promise<void> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let data: string[] = [];
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let newline: number;
    while ((newline = buffer.search(/\r\n|\r|\n/)) >= 0) {
      const line = buffer.slice(0, newline);
      buffer = buffer.slice(newline + (buffer.startsWith("\r\n", newline) ? 2 : 1));
      if (line === "") {
        if (data.length > 0) {
          try {
            onEvent(JSON.parse(data.join("\n")) as Recorded);
          } catch {
            // A frame that is not an event (none are sent today): skipped.
          }
        }
        data = [];
      } else if (line.startsWith("data:")) {
        data.push(line.slice(line.startsWith("data: ") ? 6 : 5));
      }
      // `event:`, `id:`, `retry:` and `:` comments: the data carries the seq and name already.
    }
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    });
  });
}
