// The server's native API, as the inspector uses it: relative to the page (so it works nested
// under a prefix), with `Authorization: Bearer <key>` when the user gave a key.

/** An event with its seq, as the server sends it (schemas/Recorded.schema.json). */
export interface Recorded {
  seq: number;
  id: string;
  name: string;
  payload: unknown;
  timestamp: string;
  causedBy: string | null;
}

/** A page of events (schemas/EventsPage.schema.json). */
export interface EventsPage {
  events: Recorded[];
  len: number;
  nextAfter: number | null;
}

export type SessionStatus = "running" | "idle" | "waiting" | "failed";

/** A session as the server lists it (schemas/SessionSummary.schema.json). */
export interface SessionSummary {
  id: string;
  workflow: string | null;
  parent: string | null;
  status: SessionStatus;
  len: number;
  created: string;
  lastEvent: string;
  hosted: boolean;
  runningHere?: boolean;
}

/** The state at one position (schemas/StateAt.schema.json). */
export interface StateAt {
  position: number;
  state: unknown;
}

/** One RFC 6902 operation. */
export interface PatchOp {
  op: string;
  path: string;
  from?: string;
  value?: unknown;
}

/** An answer the server refused, in its error shape `{"error":{"code","message"}}`. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

const KEY_STORAGE = "openharness.inspector.key";

export class Api {
  private key: string | null;
  /** Called when the server answers 401: the page asks for a key. */
  onUnauthorized: (() => void) | null = null;

  constructor(readonly base: URL) {
    this.key = readKey();
  }

  setKey(key: string | null): void {
    this.key = key && key.trim() !== "" ? key.trim() : null;
    try {
      if (this.key) sessionStorage.setItem(KEY_STORAGE, this.key);
      else sessionStorage.removeItem(KEY_STORAGE);
    } catch {
      // Storage may be unavailable (private mode): the key lasts as long as the page.
    }
  }

  hasKey(): boolean {
    return this.key !== null;
  }

  url(path: string): URL {
    return new URL(path, this.base);
  }

  headers(extra: Record<string, string> = {}): Record<string, string> {
    const headers: Record<string, string> = { ...extra };
    if (this.key) headers["authorization"] = `Bearer ${this.key}`;
    return headers;
  }

  async json<T>(path: string, init: { method?: string; body?: unknown; signal?: AbortSignal } = {}): Promise<T> {
    const request: RequestInit = {
      method: init.method ?? "GET",
      headers: this.headers(init.body === undefined ? { accept: "application/json" } : { accept: "application/json", "content-type": "application/json" }),
    };
    if (init.body !== undefined) request.body = JSON.stringify(init.body);
    if (init.signal) request.signal = init.signal;
    const response = await fetch(this.url(path), request);
    if (!response.ok) throw await refusal(response, this);
    return (await response.json()) as T;
  }

  sessions(): Promise<{ sessions: SessionSummary[] }> {
    return this.json("sessions");
  }

  session(id: string): Promise<SessionSummary> {
    return this.json(`sessions/${encodeURIComponent(id)}`);
  }

  /** Events with seq > `after` (all from 0 when `after` is null), at most `limit`. */
  events(id: string, after: number | null, limit: number, signal?: AbortSignal): Promise<EventsPage> {
    const query = new URLSearchParams({ limit: String(limit) });
    if (after !== null) query.set("after", String(after));
    return this.json(`sessions/${encodeURIComponent(id)}/events?${query}`, signal ? { signal } : {});
  }

  /** States at several positions in one request. */
  states(id: string, positions: number[]): Promise<StateAt[]> {
    return this.json(`sessions/${encodeURIComponent(id)}/states?at=${positions.join(",")}`);
  }

  diff(id: string, from: number, to: number): Promise<PatchOp[]> {
    return this.json(`sessions/${encodeURIComponent(id)}/diff?from=${from}&to=${to}`);
  }

  fork(id: string, position: number): Promise<{ session: string }> {
    return this.json(`sessions/${encodeURIComponent(id)}/fork`, { method: "POST", body: { at: "position", position } });
  }

  input(id: string, text: string): Promise<{ session: string }> {
    return this.json(`sessions/${encodeURIComponent(id)}/input`, { method: "POST", body: { text } });
  }

  answer(id: string, request: string, text: string): Promise<{ session: string }> {
    return this.json(`sessions/${encodeURIComponent(id)}/answer`, { method: "POST", body: { request, text } });
  }
}

function readKey(): string | null {
  try {
    return sessionStorage.getItem(KEY_STORAGE);
  } catch {
    return null;
  }
}

export async function refusal(response: Response, api: Api): Promise<ApiError> {
  let code = "http_" + response.status;
  let message = response.statusText || `HTTP ${response.status}`;
  try {
    const body = (await response.json()) as { error?: { code?: string; message?: string } };
    if (body.error?.code) code = body.error.code;
    if (body.error?.message) message = body.error.message;
  } catch {
    // Not the error shape: keep the status line.
  }
  if (response.status === 401) api.onUnauthorized?.();
  return new ApiError(response.status, code, message);
}
