/**
 * The types of the native API's answers: the wire types generated from the JSON Schemas
 * (`./generated/wire.ts`), and the few shapes the routes add around them.
 */
import type {
  CodeChange,
  Feedback,
  ForkPoint,
  Recorded,
  SessionSort,
  SessionStatus,
  SessionSummary,
  StateAt,
  UiMessage,
  Message,
} from "./generated/wire.js";

export type * from "./generated/wire.js";

/** `POST /sessions`, `…/input`, `…/answer`, `…/resume`, `…/fork`: the turn runs on in the server. */
export interface Accepted {
  session: string;
  status: "running";
}

/** `GET /sessions/{id}`: the summary, and whether this server runs a turn on it now. */
export interface SessionDetail extends Omit<SessionSummary, "created" | "lastEvent" | "workflow" | "parent" | "hosted"> {
  created?: string;
  lastEvent?: string;
  workflow?: string | null;
  parent?: string | null;
  hosted?: boolean;
  runningHere: boolean;
  /**
   * When the code that recorded the session (its root's `workflow:started`) differs from the
   * code registered in this server now: both fingerprints, versions and commits. Absent when
   * they agree or the workflow is not registered here.
   */
  codeChange?: CodeChange;
}

/**
 * What `querySessions` asks `GET /sessions` for: every field optional, and they combine.
 * `after` is the `nextAfter` of the page before.
 */
export interface SessionsQuery {
  /** Text in the id, title, workflow, an agent's name or an input (any case). */
  search?: string;
  /** Any of these statuses. */
  status?: readonly SessionStatus[];
  /** Owned by this workflow (a fork by its root's). */
  workflow?: string;
  /** Ran this agent. */
  agent?: string;
  /** Active (last event) at or after this time. */
  since?: Date | string;
  /** Started (first event) at or before this time. */
  until?: Date | string;
  /** With (`true`) or without (`false`) a question waiting for an answer. */
  openRequest?: boolean;
  /** The direct forks of this session. */
  forkOf?: string;
  /**
   * Scored by this online scorer (`openharness serve --online-scorers`); the scorer that
   * `minScore`, `maxScore` and the `score` / `lowestScore` sorts read (they need it).
   */
  scorer?: string;
  /** The scorer's latest score at least this. */
  minScore?: number;
  /** The scorer's latest score at most this. */
  maxScore?: number;
  /** Annotated by a person (`true`), or by nobody yet (`false`: an annotation queue). */
  annotated?: boolean;
  /** Annotated with this label. */
  label?: string;
  /** The order (default: most recently active first). */
  sort?: SessionSort;
  /** The cursor of the next page (a page's `nextAfter`). */
  after?: string;
  /** At most this many (1–1000). */
  limit?: number;
}

/** What a fork changes (`fork`): a new turn's input once forked, or the state it starts from. */
export interface ForkChange {
  /** The input of a turn run once forked (fork right before a `user:input` to replace it). */
  input?: string;
  /** A JSON merge patch (RFC 7396) on the state the fork starts from. */
  stateEdit?: Record<string, unknown>;
  /** Run the fork (and its input) with this provider of `providers()` instead of the workflow's own. */
  provider?: string;
  /**
   * Another answer to a question open at the fork point (an `input:requested` the parent
   * answered differently, or not yet): its text answers the only one open; `{ text, request }`
   * names the request. A fork point with no question open is refused before anything is recorded.
   */
  answer?: string | { text: string; request?: string };
}

/** `GET /providers`: the providers a fork may run with, as the server's operator named them. */
export interface ForkProviders {
  providers: { name: string }[];
}

/** `GET /experiments`: the store's experiments (servers built with the `eval` feature). */
export interface ExperimentList {
  experiments: { name: string; created: string; lastEvent: string; events: number }[];
}

/** One run of an experiment: its `eval:recorded` and, by scorer, its `eval:scored`. */
export interface ExperimentRun {
  run: {
    case: string;
    variant: string;
    repeat: number;
    attempt: number;
    session?: string;
    status: "completed" | "failed" | string;
    error?: string;
    reason?: string;
    len: number;
    forkPosition?: number;
    stateHash?: string;
    latencyMs: number;
    cost: number;
    turns: number;
  };
  scores: Record<string, { scorer: string; value: number | null; passed: boolean; better: string; detail?: string; session: string }>;
}

/** `GET /experiments/{name}`: the definition and every run, as `openharness eval show --json` prints it. */
export interface Experiment {
  name: string;
  created: string;
  definition: {
    experiment: string;
    cases: { id: string; inputs?: string[]; session?: string; at?: string }[];
    variants: { name: string; description?: string }[];
    baseline: string;
    repeats: number;
    scorers: { name: string }[];
  };
  runs: ExperimentRun[];
}

/** One operation of a JSON patch (RFC 6902), as `GET /sessions/{id}/diff` answers them. */
export type JsonPatchOperation =
  | { op: "add" | "replace" | "test"; path: string; value: unknown }
  | { op: "remove"; path: string }
  | { op: "move" | "copy"; from: string; path: string };

/**
 * The shapes `GET /sessions/{id}/messages` answers: AI SDK v4-style, the chat as `useChat`
 * streamed it (`ui`: UIMessages, one assistant message per turn, the ids the stream used), or
 * UIMessages one per agent call (`calls`, what `deriveMessages` derives in the browser).
 */
export type MessageShape = "v4" | "ui" | "calls";

/** What `messages()` answers for each shape. */
export interface MessagesOf {
  v4: Message[];
  ui: UiMessage[];
  calls: UiMessage[];
}

/** One online score of `GET /sessions/{id}/feedback`: a scorer's score of a turn, as recorded. */
export type OnlineScore = Feedback["scores"][number];

export type { ForkPoint, Recorded, StateAt };
