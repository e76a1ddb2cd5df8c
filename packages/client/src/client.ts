/**
 * {@link OpenHarnessClient}: every route of the native API as a typed method. Answers are the
 * wire types generated from the server's JSON Schemas; failures are {@link OpenHarnessError}s
 * carrying the server's `code`.
 */
import { OpenHarnessError, errorFromResponse, networkError } from "./errors.js";
import { EventStream, type StreamEventsOptions } from "./stream.js";
import type {
  Accepted,
  Annotation,
  AnnotationAdded,
  EventsPage,
  Experiment,
  ExperimentList,
  Feedback,
  ForkChange,
  ForkProviders,
  ForkPoint,
  JsonPatchOperation,
  MessageShape,
  MessagesOf,
  Recorded,
  SessionComparison,
  SessionDetail,
  StateCheck,
  SessionSummary,
  SessionsPage,
  SessionsQuery,
  StateAt,
} from "./types.js";

/** How to reach the server. */
export interface ClientOptions {
  /**
   * The server's base URL, such as `http://127.0.0.1:8080` or `/harness` (relative URLs resolve
   * against the page). Default: the page's origin.
   */
  baseUrl?: string;
  /**
   * Sent as `Authorization: Bearer <apiKey>` when the server requires keys. A function is asked
   * on every request (and every stream connection), so a page can ask for a key after its
   * first `401` and keep the same client; `null` or `""` sends none.
   */
  apiKey?: string | (() => string | null | undefined);
  /** Extra headers for every request. */
  headers?: Record<string, string>;
  /** The `fetch` to use (default: the global one). */
  fetch?: typeof fetch;
}

/** A request's own options. */
export interface RequestOptions {
  signal?: AbortSignal;
}

/** The largest number of positions one `states` request may ask for (the server's limit). */
export const MAX_POSITIONS_PER_REQUEST = 1000;
/** The largest page of events the server answers. */
export const MAX_PAGE = 1000;

/** A typed client of the Open Harness HTTP API. */
export class OpenHarnessClient {
  readonly baseUrl: string;
  private readonly fixedHeaders: Record<string, string>;
  private readonly apiKey: ClientOptions["apiKey"];
  private readonly fetchImpl: typeof fetch;

  constructor(options: ClientOptions = {}) {
    this.baseUrl = (options.baseUrl ?? "").replace(/\/+$/, "");
    this.fixedHeaders = { ...options.headers };
    this.apiKey = options.apiKey;
    const f = options.fetch ?? globalThis.fetch;
    if (typeof f !== "function") throw new Error("no fetch: pass one in ClientOptions.fetch");
    // Called unbound, the browser's fetch throws "Illegal invocation".
    this.fetchImpl = (input, init) => f(input, init);
  }

  /** The headers of every request: the extra ones, and the API key as it is now. */
  private get headers(): Record<string, string> {
    const key = typeof this.apiKey === "function" ? this.apiKey() : this.apiKey;
    return key ? { ...this.fixedHeaders, authorization: `Bearer ${key}` } : { ...this.fixedHeaders };
  }

  /** The absolute (or page-relative) URL of an API path. */
  url(path: string): string {
    return `${this.baseUrl}${path}`;
  }

  /** Sends a request accepting `accept`; a failed answer is thrown as an {@link OpenHarnessError}. */
  private async send(method: string, path: string, accept: string, body: unknown, options: RequestOptions): Promise<Response> {
    const headers: Record<string, string> = { ...this.headers, accept };
    const init: RequestInit = { method, headers };
    if (options.signal) init.signal = options.signal;
    if (body !== undefined) {
      headers["content-type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    let response: Response;
    try {
      response = await this.fetchImpl(this.url(path), init);
    } catch (err) {
      throw networkError(err);
    }
    if (!response.ok) throw await errorFromResponse(response);
    return response;
  }

  private async request<T>(method: string, path: string, body?: unknown, options: RequestOptions = {}): Promise<T> {
    const response = await this.send(method, path, "application/json", body, options);
    if (response.status === 204) return undefined as T;
    const text = await response.text();
    try {
      return JSON.parse(text) as T;
    } catch (err) {
      throw new OpenHarnessError(response.status, "bad_response", `${method} ${path} did not answer JSON`, { cause: err });
    }
  }

  /** `GET /health`. */
  health(options?: RequestOptions): Promise<{ status: string }> {
    return this.request("GET", "/health", undefined, options);
  }

  /** Every session, with owner, lineage, status and length. */
  async listSessions(options?: RequestOptions): Promise<SessionSummary[]> {
    const answer = await this.request<{ sessions: SessionSummary[] }>("GET", "/sessions", undefined, options);
    return answer.sessions;
  }

  /**
   * A page of sessions, searched, filtered and sorted on the server, each with its title (its
   * first input), agents, tokens, cost and open requests; `nextAfter` asks for the next page.
   *
   * ```ts
   * const page = await client.querySessions({ search: "lisbon", status: ["waiting"], limit: 50 });
   * const next = page.nextAfter ? await client.querySessions({ search: "lisbon", after: page.nextAfter }) : null;
   * ```
   */
  querySessions(query: SessionsQuery = {}, options?: RequestOptions): Promise<SessionsPage> {
    const params = new URLSearchParams();
    const time = (t: Date | string) => (typeof t === "string" ? t : t.toISOString());
    if (query.search !== undefined) params.set("search", query.search);
    if (query.status !== undefined && query.status.length > 0) params.set("status", query.status.join(","));
    if (query.workflow !== undefined) params.set("workflow", query.workflow);
    if (query.agent !== undefined) params.set("agent", query.agent);
    if (query.since !== undefined) params.set("since", time(query.since));
    if (query.until !== undefined) params.set("until", time(query.until));
    if (query.openRequest !== undefined) params.set("openRequest", String(query.openRequest));
    if (query.forkOf !== undefined) params.set("forkOf", query.forkOf);
    if (query.scorer !== undefined) params.set("scorer", query.scorer);
    if (query.minScore !== undefined) params.set("minScore", String(query.minScore));
    if (query.maxScore !== undefined) params.set("maxScore", String(query.maxScore));
    if (query.annotated !== undefined) params.set("annotated", String(query.annotated));
    if (query.label !== undefined) params.set("label", query.label);
    if (query.sort !== undefined) params.set("sort", query.sort);
    if (query.after !== undefined) params.set("after", query.after);
    if (query.limit !== undefined) params.set("limit", String(query.limit));
    const q = params.toString();
    return this.request("GET", `/sessions${q ? `?${q}` : ""}`, undefined, options);
  }

  /** Starts a session of `workflow` (with its first input); the turn runs on in the server. */
  createSession(workflow: string, input?: string, options?: RequestOptions): Promise<Accepted> {
    const body: { workflow: string; input?: string } = { workflow };
    if (input !== undefined) body.input = input;
    return this.request("POST", "/sessions", body, options);
  }

  /** One session, and whether this server runs a turn on it now. */
  getSession(sessionId: string, options?: RequestOptions): Promise<SessionDetail> {
    return this.request("GET", `/sessions/${enc(sessionId)}`, undefined, options);
  }

  /**
   * The session folded through the server's handlers and compared with the state hashes its
   * live run recorded: `divergence` names the first position where the state parts (a handler
   * changed since the recording), `checked` how many hashes were compared.
   */
  checkState(sessionId: string, options?: RequestOptions): Promise<StateCheck> {
    return this.request("GET", `/sessions/${enc(sessionId)}/state-check`, undefined, options);
  }

  /**
   * The session as `openharness export` writes it: JSONL whose blocks are SHA-256 hash chains
   * (a fork's ancestors first), so `openharness verify FILE` checks the saved text and
   * `openharness import FILE` reads it (docs/export-format.md). Save the text as it is: any
   * changed byte breaks the chain. `404 not_found` for an unknown session, `409 missing_parent`
   * for a fork whose parent is gone from the store.
   *
   * ```ts
   * await writeFile(`${id}.jsonl`, await client.exportJsonl(id));
   * ```
   */
  async exportJsonl(sessionId: string, options: RequestOptions = {}): Promise<string> {
    const path = `/sessions/${enc(sessionId)}/export`;
    const response = await this.send("GET", path, "application/x-ndjson", undefined, options);
    return response.text();
  }

  /** Deletes a session (`409 session_busy` while a turn runs, `409 has_forks` with forks). */
  deleteSession(sessionId: string, options?: RequestOptions): Promise<void> {
    return this.request("DELETE", `/sessions/${enc(sessionId)}`, undefined, options);
  }

  /** A new turn with `text` (`409 session_busy` while one runs). */
  sendInput(sessionId: string, text: string, options?: RequestOptions): Promise<Accepted> {
    return this.request("POST", `/sessions/${enc(sessionId)}/input`, { text }, options);
  }

  /** Answers the open `input:requested` whose event id is `requestId`. */
  answer(sessionId: string, requestId: string, text: string, options?: RequestOptions): Promise<Accepted> {
    return this.request("POST", `/sessions/${enc(sessionId)}/answer`, { request: requestId, text }, options);
  }

  /** Finishes a turn a crash cut off. */
  resume(sessionId: string, options?: RequestOptions): Promise<Accepted> {
    return this.request("POST", `/sessions/${enc(sessionId)}/resume`, undefined, options);
  }

  /** Cancels the turn this server runs on the session; `cancelled` is false when none ran. */
  cancel(sessionId: string, options?: RequestOptions): Promise<{ cancelled: boolean }> {
    return this.request("POST", `/sessions/${enc(sessionId)}/cancel`, undefined, options);
  }

  /** One page of events after seq `after` (absent: from the first), at most `limit` (≤ 1000). */
  events(sessionId: string, page: { after?: number | null; limit?: number } = {}, options?: RequestOptions): Promise<EventsPage> {
    const query = new URLSearchParams();
    if (page.after !== undefined && page.after !== null) query.set("after", String(page.after));
    if (page.limit !== undefined) query.set("limit", String(page.limit));
    const q = query.toString();
    return this.request("GET", `/sessions/${enc(sessionId)}/events${q ? `?${q}` : ""}`, undefined, options);
  }

  /** Every recorded event of a session, page by page (1000 a request). */
  async allEvents(sessionId: string, after: number | null = null, options?: RequestOptions): Promise<Recorded[]> {
    const out: Recorded[] = [];
    let cursor = after;
    for (;;) {
      const page = await this.events(sessionId, { after: cursor, limit: MAX_PAGE }, options);
      out.push(...page.events);
      if (page.nextAfter === null || page.nextAfter === undefined || page.events.length === 0) return out;
      cursor = page.nextAfter;
    }
  }

  /** The state at a position (0: the initial state; absent: the end). */
  stateAt(sessionId: string, at?: number, options?: RequestOptions): Promise<StateAt> {
    const q = at === undefined ? "" : `?at=${at}`;
    return this.request("GET", `/sessions/${enc(sessionId)}/state${q}`, undefined, options);
  }

  /**
   * The states at several positions in one request per 1000 positions (the server folds them in
   * one pass). Positions past the end are answered at the end.
   */
  async statesAt(sessionId: string, positions: readonly number[], options?: RequestOptions): Promise<StateAt[]> {
    const out: StateAt[] = [];
    for (let i = 0; i < positions.length; i += MAX_POSITIONS_PER_REQUEST) {
      const chunk = positions.slice(i, i + MAX_POSITIONS_PER_REQUEST);
      const answer = await this.request<StateAt[]>(
        "GET",
        `/sessions/${enc(sessionId)}/states?at=${chunk.join(",")}`,
        undefined,
        options,
      );
      out.push(...answer);
    }
    return out;
  }

  /** The JSON patch that turns the state at `from` into the state at `to`. */
  diff(sessionId: string, from: number, to: number, options?: RequestOptions): Promise<JsonPatchOperation[]> {
    return this.request("GET", `/sessions/${enc(sessionId)}/diff?from=${from}&to=${to}`, undefined, options);
  }

  /**
   * The chat messages at a position (absent: the end), AI SDK v4-style or as UIMessages. With
   * `shape: "ui"`, `approvals: "tool"` shows approval requests as the AI SDK 6+ tool approvals
   * (`dynamic-tool` parts), as `POST /api/chat` streams them to a client that sends
   * `x-openharness-approvals: tool`; the default (`"data"`) shows them as `data-input-requested`.
   */
  messages<S extends MessageShape = "v4">(
    sessionId: string,
    query: { at?: number; shape?: S; approvals?: "data" | "tool" } = {},
    options?: RequestOptions,
  ): Promise<MessagesOf[S]> {
    const params = new URLSearchParams();
    if (query.at !== undefined) params.set("at", String(query.at));
    if (query.shape) params.set("shape", query.shape);
    if (query.approvals) params.set("approvals", query.approvals);
    const q = params.toString();
    return this.request("GET", `/sessions/${enc(sessionId)}/messages${q ? `?${q}` : ""}`, undefined, options);
  }

  /**
   * A new session from a point of this one, run on: at a position, or at the nth event named
   * so; `change` asks it another input once forked, answers the question open there otherwise,
   * starts it from an edited state, or runs it with another of the server's providers.
   */
  fork(sessionId: string, at: ForkPoint, change: ForkChange = {}, options?: RequestOptions): Promise<Accepted> {
    const body: Record<string, unknown> = { ...at };
    if (change.input !== undefined) body.input = change.input;
    if (change.stateEdit !== undefined) body.stateEdit = change.stateEdit;
    if (change.provider !== undefined) body.provider = change.provider;
    if (change.answer !== undefined) body.answer = change.answer;
    return this.request("POST", `/sessions/${enc(sessionId)}/fork`, body, options);
  }

  /** The names of the providers a fork may run with (`fork(…, { provider })`); none unless the server offers some. */
  providers(options?: RequestOptions): Promise<ForkProviders> {
    return this.request("GET", "/providers", undefined, options);
  }

  /**
   * Everything said about a session, oldest first: people's annotations (who, when, a thumb,
   * labels, a note, the turn) and online scorers' scores of its turns.
   */
  feedback(sessionId: string, options?: RequestOptions): Promise<Feedback> {
    return this.request("GET", `/sessions/${enc(sessionId)}/feedback`, undefined, options);
  }

  /**
   * Records a person's annotation of a session, or of one of its turns (`turn`: the position
   * where it ended): at least a thumb, a label or a note. Answers it as recorded, with its id
   * and time; `400 bad_request` says what is wrong with it.
   *
   * ```ts
   * await client.annotate(id, { by: "ana@example.com", thumbs: "down", labels: ["wrong-city"], turn: 6 });
   * ```
   */
  annotate(sessionId: string, annotation: AnnotationAdded, options?: RequestOptions): Promise<Annotation> {
    return this.request("POST", `/sessions/${enc(sessionId)}/annotations`, annotation, options);
  }

  /** The store's experiments (`openharness eval`), newest first as the server lists them. */
  experiments(options?: RequestOptions): Promise<ExperimentList> {
    return this.request("GET", "/experiments", undefined, options);
  }

  /** One experiment: its cases, variants, repeats and scorers, and every run with its session and scores. */
  experiment(name: string, options?: RequestOptions): Promise<Experiment> {
    return this.request("GET", `/experiments/${enc(name)}`, undefined, options);
  }

  /**
   * Where this session and `other` part: their common ancestor, how many events agree, the
   * first differing event on each side with the patch between their payloads, and the patch
   * between their states just after it (a fork and its parent, or any two sessions).
   */
  compare(sessionId: string, other: string, options?: RequestOptions): Promise<SessionComparison> {
    return this.request("GET", `/sessions/${enc(sessionId)}/compare?with=${enc(other)}`, undefined, options);
  }

  /**
   * Follows a session's events live (SSE): history after `after`, then new events as they are
   * recorded; resumes with `Last-Event-ID` after a drop, never delivering an event twice.
   */
  streamEvents(sessionId: string, options: StreamEventsOptions = {}): EventStream {
    return new EventStream(
      sessionId,
      { fetch: this.fetchImpl, url: this.url(`/sessions/${enc(sessionId)}/events`), headers: () => this.headers },
      options,
    );
  }

  /** Follows a session until its current turn ends (`workflow:completed`). */
  followTurn(sessionId: string, options: Omit<StreamEventsOptions, "until"> = {}): EventStream {
    return this.streamEvents(sessionId, { ...options, until: isTurnEnd });
  }
}

/** Whether an event ends a turn. */
export function isTurnEnd(event: Pick<Recorded, "name">): boolean {
  return event.name === "workflow:completed";
}

function enc(id: string): string {
  return encodeURIComponent(id);
}
