/**
 * {@link WorkflowController}: one session's client-side model, shared by `useWorkflow`,
 * `WorkflowProvider` and `WorkflowChat` (and usable without React). It follows the session's
 * events live, builds messages from them, keeps the tape's cursor, and reads states from the
 * server's batched `GET /sessions/{id}/states?at=…` into a cache — a window of positions a
 * request, never one request per event.
 */
import {
  MessageProjection,
  OpenHarnessClient,
  OpenHarnessError,
  StreamGaveUpError,
  deriveMessages,
  isTurnEnd,
  type ChatMessage,
  type ConnectionState,
  type EventStream,
  type InputRequestPart,
  type Recorded,
  type RetryOptions,
  type SessionStatus,
} from "@openharness/client";

/** AI SDK 5's chat status: `submitted` (sent, nothing back yet), `streaming`, `ready`, `error`. */
export type ChatStatus = "submitted" | "streaming" | "ready" | "error";

/** How a workflow is reached and what it runs. */
export interface WorkflowOptions {
  /** The server: its base URL (`"http://127.0.0.1:8080"`, `"/harness"`, `""` for this origin) or a client. */
  api: string | OpenHarnessClient;
  /** The workflow a new session runs (the first message starts it). */
  workflow?: string;
  /** Open this recorded session instead of starting one. */
  sessionId?: string;
  /** An API key, when the server requires one. */
  apiKey?: string;
  /** Extra request headers. */
  headers?: Record<string, string>;
  /** The `fetch` to use. */
  fetch?: typeof fetch;
  /** How the live stream reconnects. */
  retry?: RetryOptions;
  /** Positions on each side of the cursor read per states request (default 64). */
  stateWindow?: number;
  /** Every event, as it arrives. */
  onEvent?: (event: Recorded) => void;
  /** A turn ended (`workflow:completed`). */
  onFinish?: (turn: { sessionId: string; reason: string; event: Recorded }) => void;
  /** An error: a request failed, the stream gave up, or the workflow recorded `error:occurred`. */
  onError?: (error: Error) => void;
}

/** The tape's cursor and what it shows. */
export interface TapeSnapshot {
  /** Events applied at the cursor: 0 is the initial state, `length` the end. */
  position: number;
  /** Events recorded so far. */
  length: number;
  /** The cursor follows the live end: new events move it. */
  isRecording: boolean;
  /** The cursor is somewhere in the past, or playing. */
  isReplaying: boolean;
  /** `play` / `playTo` is moving the cursor. */
  isPlaying: boolean;
  /** The state at the cursor is being read (`state` still shows the previous one). */
  isLoadingState: boolean;
}

/** Everything the controller shows, as one immutable value. */
export interface WorkflowSnapshot<State = unknown> {
  sessionId: string | null;
  /** Every event of the session, in order (`events[position - 1]` is the one at the cursor). */
  events: readonly Recorded[];
  /** The chat messages at the cursor (ids `msg-<event id>`, stable). */
  messages: readonly ChatMessage[];
  /** The workflow's state at the cursor (`undefined` until read). */
  state: State | undefined;
  /** The chat input (shared by everything reading this controller). */
  input: string;
  status: ChatStatus;
  error: Error | undefined;
  /**
   * The session as far as this client knows: `running` during a turn — and still `running`
   * when the live stream gave up, since nothing said the turn ended.
   */
  sessionStatus: SessionStatus | null;
  /** The live stream's connection. */
  connection: ConnectionState | "idle";
  /** The newest open request to a person (answered by the next `send`), at the live end. */
  pendingRequest: InputRequestPart["data"] | null;
  tape: TapeSnapshot;
}

type Listener = () => void;

/** One session's model: subscribe to it, read {@link WorkflowController.getSnapshot}, call its actions. */
export class WorkflowController<State = unknown> {
  readonly client: OpenHarnessClient;
  private readonly options: WorkflowOptions;
  private listeners = new Set<Listener>();
  private snapshot: WorkflowSnapshot<State>;
  private events: Recorded[] = [];
  private live = new MessageProjection();
  private states = new Map<number, State>();
  private requested = new Set<number>();
  private liveFetch: { running: boolean; again: boolean } = { running: false, again: false };
  private stream: EventStream | null = null;
  private connected = false;
  private loading: Promise<void> | null = null;
  private playing: ReturnType<typeof setInterval> | null = null;
  private derived: { position: number; length: number; messages: ChatMessage[] } | null = null;
  private generation = 0;

  constructor(options: WorkflowOptions) {
    this.options = options;
    this.client =
      typeof options.api === "string"
        ? new OpenHarnessClient({
            baseUrl: options.api,
            ...(options.apiKey ? { apiKey: options.apiKey } : {}),
            ...(options.headers ? { headers: options.headers } : {}),
            ...(options.fetch ? { fetch: options.fetch } : {}),
          })
        : options.api;
    this.snapshot = {
      sessionId: options.sessionId ?? null,
      events: [],
      messages: [],
      state: undefined,
      input: "",
      status: "ready",
      error: undefined,
      sessionStatus: null,
      connection: "idle",
      pendingRequest: null,
      tape: { position: 0, length: 0, isRecording: true, isReplaying: false, isPlaying: false, isLoadingState: false },
    };
  }

  /** Listens to changes; returns the unsubscribe. */
  subscribe = (listener: Listener): (() => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };

  /** The current snapshot (the same object until something changes). */
  getSnapshot = (): WorkflowSnapshot<State> => this.snapshot;

  /** Starts following the session (if any) live; `disconnect` stops. Safe to call twice. */
  connect(): void {
    this.connected = true;
    const id = this.snapshot.sessionId;
    if (id && !this.stream) {
      if (this.events.length === 0 && !this.loading) void this.load(id);
      else if (!this.loading) this.follow(id);
    }
  }

  /** Stops the live stream and any playing (the model stays; `connect` goes on from where it was). */
  disconnect(): void {
    this.connected = false;
    this.pause();
    this.stream?.close();
    this.stream = null;
  }

  // ---- chat ----------------------------------------------------------------------------

  /** Sets the shared chat input. */
  setInput = (input: string): void => {
    this.update({ input });
  };

  /**
   * Sends a message: answers the open request to a person if there is one, else starts the
   * session (first message) or a new turn. The tape goes back to the live end.
   */
  send = async (text: string): Promise<void> => {
    const request = this.snapshot.pendingRequest;
    if (request) return this.respond(request.requestId, text);
    await this.turn(async () => {
      const id = this.snapshot.sessionId;
      if (id) {
        await this.client.sendInput(id, text);
        return id;
      }
      if (!this.options.workflow) throw new Error("useWorkflow: give `workflow` (or a `sessionId`) to start a session");
      const { session } = await this.client.createSession(this.options.workflow, text);
      return session;
    });
  };

  /** Answers a request to a person (`input:requested`) with `text`. */
  respond = async (requestId: string, text: string): Promise<void> => {
    await this.turn(async () => {
      const id = this.snapshot.sessionId;
      if (!id) throw new Error("no session to answer in");
      await this.client.answer(id, requestId, text);
      return id;
    });
  };

  /** Cancels the running turn. */
  stop = async (): Promise<void> => {
    const id = this.snapshot.sessionId;
    if (!id) return;
    try {
      await this.client.cancel(id);
    } catch (err) {
      this.fail(asError(err));
    }
  };

  /** Follows the session again after the stream gave up. */
  reconnect = (): void => {
    const id = this.snapshot.sessionId;
    if (!id) return;
    this.stream?.close();
    this.stream = null;
    this.update({ error: undefined, status: this.snapshot.sessionStatus === "running" ? "streaming" : "ready" });
    if (this.connected) this.follow(id);
  };

  /** Opens another recorded session (or none: a new chat). */
  open = (sessionId: string | null): void => {
    this.disconnect();
    this.generation++;
    this.events = [];
    this.live = new MessageProjection();
    this.states.clear();
    this.requested.clear();
    this.derived = null;
    this.loading = null;
    this.update({
      sessionId,
      events: [],
      messages: [],
      state: undefined,
      status: "ready",
      error: undefined,
      sessionStatus: null,
      pendingRequest: null,
      connection: "idle",
      tape: { position: 0, length: 0, isRecording: true, isReplaying: false, isPlaying: false, isLoadingState: false },
    });
    this.connect();
  };

  private async turn(start: () => Promise<string>): Promise<void> {
    this.pause();
    this.update({ status: "submitted", error: undefined, sessionStatus: "running", input: "" });
    this.moveTo(this.events.length, true);
    try {
      const id = await start();
      if (this.snapshot.sessionId !== id) this.update({ sessionId: id });
      if (this.connected && !this.stream) this.follow(id);
    } catch (err) {
      const error = asError(err);
      this.update({ sessionStatus: this.sessionStatusFromEvents() });
      this.fail(error);
    }
  }

  // ---- loading and following -------------------------------------------------------------

  private async load(id: string): Promise<void> {
    const generation = this.generation;
    const run = (async () => {
      try {
        const detail = await this.client.getSession(id);
        // A session whose first turn has just started has no page of events yet: the stream has them.
        const history = detail.len > 0 ? await this.client.allEvents(id) : [];
        if (generation !== this.generation) return;
        for (const event of history) this.add(event, false);
        this.update({ sessionStatus: detail.status });
        this.afterEvents();
      } catch (err) {
        if (generation === this.generation) this.fail(asError(err));
        return;
      } finally {
        if (generation === this.generation) this.loading = null;
      }
      if (this.connected && generation === this.generation) this.follow(id);
    })();
    this.loading = run;
    return run;
  }

  private follow(id: string): void {
    const generation = this.generation;
    const after = this.events.length > 0 ? this.events[this.events.length - 1]!.seq : null;
    const stream = this.client.streamEvents(id, {
      after,
      ...(this.options.retry ? { retry: this.options.retry } : {}),
      onStatus: (s) => {
        if (generation === this.generation && this.stream === stream) this.update({ connection: s.state });
      },
    });
    this.stream = stream;
    void (async () => {
      try {
        for await (const event of stream) {
          if (generation !== this.generation) return;
          this.add(event, true);
          this.afterEvents();
        }
      } catch (err) {
        if (generation !== this.generation || this.stream !== stream) return;
        this.stream = null;
        const error = asError(err);
        if (error instanceof StreamGaveUpError) {
          // The stream gave up, not the session: keep its id, and say it is still running.
          this.update({ sessionStatus: "running", connection: "gave-up" });
        }
        this.fail(error);
      }
    })();
  }

  /** Adds one event (in seq order; a repeat is ignored). */
  private add(event: Recorded, live: boolean): void {
    const last = this.events[this.events.length - 1];
    if (last && event.seq <= last.seq) return;
    this.events.push(event);
    this.live.apply(event);
    if (!live) return;
    this.options.onEvent?.(event);
    if (event.name === "error:occurred") {
      const p = event.payload as { message?: unknown; code?: unknown };
      const error = new OpenHarnessError(0, typeof p.code === "string" ? p.code : "workflow_error", String(p.message ?? "the workflow failed"));
      this.update({ error });
      this.options.onError?.(error);
    }
    if (isTurnEnd(event)) {
      const reason = String((event.payload as { reason?: unknown }).reason ?? "");
      const failed = reason === "failed";
      this.update({ status: failed ? "error" : "ready", sessionStatus: this.sessionStatusFromEvents() });
      this.options.onFinish?.({ sessionId: this.snapshot.sessionId ?? "", reason, event });
    } else if (this.snapshot.status === "submitted" || this.snapshot.sessionStatus !== "running") {
      this.update({ status: "streaming", sessionStatus: "running" });
    }
  }

  /** What the last `workflow:completed` says, or `running` after events past it. */
  private sessionStatusFromEvents(): SessionStatus | null {
    const last = this.events[this.events.length - 1];
    if (!last) return null;
    if (!isTurnEnd(last)) return "running";
    const p = last.payload as { reason?: unknown; openRequests?: unknown };
    if (p.reason === "failed") return "failed";
    if (Array.isArray(p.openRequests) && p.openRequests.length > 0) return "waiting";
    if (p.reason === "waiting_for_input") return "waiting";
    return "idle";
  }

  private afterEvents(): void {
    const tape = this.snapshot.tape;
    const length = this.events.length;
    const position = tape.isRecording ? length : tape.position;
    this.update({
      events: this.events.slice(),
      pendingRequest: this.openRequest(),
      tape: { ...tape, length, position },
    });
    this.refreshView();
    if (tape.isRecording) this.fetchLiveStates();
  }

  /** The newest request still open at the end of the log. */
  private openRequest(): InputRequestPart["data"] | null {
    const last = this.events[this.events.length - 1];
    if (!last || !isTurnEnd(last)) return null;
    const open = (last.payload as { openRequests?: unknown }).openRequests;
    if (!Array.isArray(open) || open.length === 0) return null;
    const id = open[open.length - 1];
    const request = this.events.find((e) => e.id === id && e.name === "input:requested");
    if (!request) return null;
    return { requestId: request.id, prompt: String((request.payload as { prompt?: unknown }).prompt ?? "") };
  }

  // ---- the tape --------------------------------------------------------------------------

  /** Moves the cursor to `position` (clamped); at the end it follows the live end again. */
  stepTo = (position: number): void => {
    this.pause();
    this.moveTo(position);
  };
  /** One event forward. */
  step = (): void => this.stepTo(this.snapshot.tape.position + 1);
  /** One event back. */
  stepBack = (): void => this.stepTo(this.snapshot.tape.position - 1);
  /** To the initial state (position 0). */
  rewind = (): void => this.stepTo(0);

  /** Moves the cursor forward one event every `intervalMs` (default 250) to the end. */
  play = (options: { intervalMs?: number } = {}): void => {
    // Played from the end, the tape starts again from the beginning.
    if (this.snapshot.tape.position >= this.events.length) this.moveTo(0);
    this.playTo(this.events.length, options);
  };

  /** Plays to `position`, then pauses there. */
  playTo = (position: number, options: { intervalMs?: number } = {}): void => {
    this.pause();
    const target = clamp(position, 0, this.events.length);
    if (this.snapshot.tape.position >= target) return this.moveTo(target);
    this.moveTo(this.snapshot.tape.position, false, true);
    this.prefetch(this.snapshot.tape.position, target);
    this.playing = setInterval(() => {
      const next = this.snapshot.tape.position + 1;
      if (next >= target) {
        this.pause();
        this.moveTo(target);
      } else {
        this.moveTo(next, false, true);
      }
    }, options.intervalMs ?? 250);
    this.update({ tape: { ...this.snapshot.tape, isPlaying: true, isReplaying: true, isRecording: false } });
  };

  /** Stops playing (the cursor stays). */
  pause = (): void => {
    if (this.playing === null) return;
    clearInterval(this.playing);
    this.playing = null;
    this.update({ tape: { ...this.snapshot.tape, isPlaying: false } });
  };

  private moveTo(position: number, forceLive = false, playing = false): void {
    const length = this.events.length;
    const at = clamp(Math.round(position), 0, length);
    const isRecording = forceLive || (!playing && at === length);
    this.update({
      tape: { ...this.snapshot.tape, position: at, length, isRecording, isReplaying: !isRecording, isPlaying: playing },
    });
    this.refreshView();
  }

  /** Sets messages and state for the cursor; reads the state when it is not cached. */
  private refreshView(): void {
    const { position, length, isRecording } = this.snapshot.tape;
    const messages = isRecording && position === length ? this.live.messages() : this.messagesAt(position);
    const cached = this.states.has(position);
    this.update({
      messages,
      ...(cached ? { state: this.states.get(position) } : {}),
      tape: { ...this.snapshot.tape, isLoadingState: !cached && this.snapshot.sessionId !== null && length > 0 },
    });
    if (!cached && this.snapshot.sessionId && !isRecording) this.fetchWindow(position);
  }

  private messagesAt(position: number): ChatMessage[] {
    const d = this.derived;
    if (d && d.position === position && d.length >= position) return d.messages;
    const messages = deriveMessages(this.events.slice(0, position));
    this.derived = { position, length: this.events.length, messages };
    return messages;
  }

  /** States around `center`, in one request. */
  private fetchWindow(center: number): void {
    const w = this.options.stateWindow ?? 64;
    this.fetchStates(range(Math.max(0, center - w), Math.min(this.events.length, center + w)), center);
  }

  /** The states ahead of a play, a window a request. */
  private prefetch(from: number, to: number): void {
    const w = this.options.stateWindow ?? 64;
    this.fetchStates(range(from, Math.min(to, from + 4 * w)), from);
  }

  /** During a live turn: the states of the new positions, one request at a time, coalesced. */
  private fetchLiveStates(): void {
    if (!this.snapshot.sessionId) return;
    if (this.liveFetch.running) {
      this.liveFetch.again = true;
      return;
    }
    const length = this.events.length;
    // The newest positions only: older ones are read when the cursor goes there.
    const w = this.options.stateWindow ?? 64;
    const missing = range(Math.max(0, length - 2 * w), length).filter((p) => !this.states.has(p) && !this.requested.has(p));
    if (missing.length === 0) return;
    this.liveFetch.running = true;
    void this.fetchStates(missing, length).finally(() => {
      this.liveFetch.running = false;
      if (this.liveFetch.again) {
        this.liveFetch.again = false;
        this.fetchLiveStates();
      }
    });
  }

  private async fetchStates(positions: number[], wanted: number): Promise<void> {
    const id = this.snapshot.sessionId;
    if (!id) return;
    const generation = this.generation;
    const missing = positions.filter((p) => !this.states.has(p) && !this.requested.has(p));
    if (!missing.includes(wanted) && !this.states.has(wanted) && !this.requested.has(wanted)) missing.push(wanted);
    if (missing.length === 0) return;
    missing.forEach((p) => this.requested.add(p));
    try {
      const answers = await this.client.statesAt(id, missing);
      if (generation !== this.generation) return;
      // A position past what the server had (a race with a live turn) answers its end: skip it.
      const asked = new Set(missing);
      for (const a of answers) if (asked.has(a.position)) this.states.set(a.position, a.state as State);
    } catch (err) {
      if (generation === this.generation) this.fail(asError(err));
    } finally {
      missing.forEach((p) => this.requested.delete(p));
    }
    if (generation !== this.generation) return;
    const position = this.snapshot.tape.position;
    if (this.states.has(position)) {
      this.update({ state: this.states.get(position), tape: { ...this.snapshot.tape, isLoadingState: false } });
    } else if (!this.requested.has(position) && !this.snapshot.tape.isRecording) {
      this.fetchWindow(position);
    }
  }

  // ---- plumbing --------------------------------------------------------------------------

  private fail(error: Error): void {
    this.update({ error, status: "error" });
    this.options.onError?.(error);
  }

  private update(patch: Partial<WorkflowSnapshot<State>>): void {
    this.snapshot = { ...this.snapshot, ...patch };
    // React batches the renders several notifications in one tick cause.
    for (const listener of [...this.listeners]) listener();
  }
}

function clamp(n: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, n));
}

function range(from: number, to: number): number[] {
  const out: number[] = [];
  for (let i = from; i <= to; i++) out.push(i);
  return out;
}

function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}
