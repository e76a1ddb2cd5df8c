// The session list's state and rules, without a page: the filter the user set (search, status,
// workflow, an online scorer and bounds on its score, annotated or not, a label, the sort) and
// the `GET /sessions` query it asks for, the filter as address parameters (the review queue's
// `#queue&…`), how the pages read so far merge with a refresh, and how a row says its times,
// duration, tokens, cost, scores and annotations.

import type { AnnotationSummary, SessionSort, SessionStatus, SessionSummary, SessionsQuery } from "@openharness/client";

/** Sessions asked for per page. */
export const PAGE = 100;
/** The most one request may ask for (the server's limit). */
export const MAX_LIMIT = 1000;

/** What the user asked the list for. */
export interface ListFilter {
  /** Text in the id, title, workflow, an agent's name or an input. */
  search: string;
  /** One status, or every status (""). */
  status: SessionStatus | "";
  /** One workflow, or every workflow (""). */
  workflow: string;
  sort: SessionSort;
  /** An online scorer: only the sessions it scored; the score the bounds and score sorts read. */
  scorer: string;
  /** The scorer's latest score at least / at most this, as typed ("": no bound). */
  minScore: string;
  maxScore: string;
  /** Annotated by someone (`yes`), by nobody yet (`no`), or either (""). */
  annotated: "" | "yes" | "no";
  /** Annotated with this label ("": any). */
  label: string;
}

export const STATUSES: readonly SessionStatus[] = ["running", "waiting", "idle", "failed"];
export const SORTS: readonly SessionSort[] = ["recent", "newest", "oldest", "longest", "tokens", "cost", "score", "lowestScore"];
/** The sorts that order by the chosen scorer's score (the server needs a scorer for them). */
export const SCORE_SORTS: readonly SessionSort[] = ["score", "lowestScore"];

export function initialFilter(): ListFilter {
  return { search: "", status: "", workflow: "", sort: "recent", scorer: "", minScore: "", maxScore: "", annotated: "", label: "" };
}

/** A score bound as typed: a number, or undefined for none (empty or not a number). */
export function scoreBound(text: string): number | undefined {
  if (text.trim() === "") return undefined;
  const value = Number(text);
  return Number.isFinite(value) ? value : undefined;
}

/**
 * The query for the page after `after` (the first page without it) of `limit` sessions
 * (clamped to 1..1000): only what the filter sets is sent, texts trimmed. Score bounds and
 * score sorts are sent only with a scorer (the server refuses them without one): without a
 * scorer, a score sort lists as the default does.
 */
export function queryOf(filter: ListFilter, after?: string | null, limit = PAGE): SessionsQuery {
  const query: SessionsQuery = { limit: Math.min(MAX_LIMIT, Math.max(1, Math.floor(limit))) };
  const search = filter.search.trim();
  if (search !== "") query.search = search;
  if (filter.status !== "") query.status = [filter.status];
  if (filter.workflow !== "") query.workflow = filter.workflow;
  const scorer = filter.scorer.trim();
  if (scorer !== "") {
    query.scorer = scorer;
    const min = scoreBound(filter.minScore);
    const max = scoreBound(filter.maxScore);
    if (min !== undefined) query.minScore = min;
    if (max !== undefined) query.maxScore = max;
  }
  if (filter.annotated !== "") query.annotated = filter.annotated === "yes";
  const label = filter.label.trim();
  if (label !== "") query.label = label;
  if (filter.sort !== "recent" && (scorer !== "" || !SCORE_SORTS.includes(filter.sort))) query.sort = filter.sort;
  if (after) query.after = after;
  return query;
}

/** The filter's parameters as an address says them (`scorer=helpful&sort=lowestScore`): only those set. */
export function filterParams(filter: ListFilter): URLSearchParams {
  const params = new URLSearchParams();
  const defaults = initialFilter();
  for (const key of Object.keys(defaults) as (keyof ListFilter)[]) {
    const value = filter[key].trim();
    if (value !== defaults[key]) params.set(key, value);
  }
  return params;
}

/** The filter an address's parameters set (unknown parameters and values are left out). */
export function filterFromParams(params: URLSearchParams): Partial<ListFilter> {
  const filter: Partial<ListFilter> = {};
  const text = (key: "search" | "workflow" | "scorer" | "minScore" | "maxScore" | "label"): void => {
    const value = params.get(key);
    if (value !== null) filter[key] = value;
  };
  text("search");
  text("workflow");
  text("scorer");
  text("minScore");
  text("maxScore");
  text("label");
  const status = params.get("status");
  if (status !== null && (status === "" || STATUSES.includes(status as SessionStatus))) filter.status = status as ListFilter["status"];
  const sort = params.get("sort");
  if (sort !== null && SORTS.includes(sort as SessionSort)) filter.sort = sort as SessionSort;
  const annotated = params.get("annotated");
  if (annotated === "" || annotated === "yes" || annotated === "no") filter.annotated = annotated;
  return filter;
}

/** Whether two filters ask the same. */
export function sameFilter(a: ListFilter, b: ListFilter): boolean {
  return (Object.keys(a) as (keyof ListFilter)[]).every((key) => a[key] === b[key]);
}

/**
 * The list after a refresh of its first `fresh.length` rows: the fresh rows, then those read
 * before beyond them that the fresh ones do not already hold (a session that moved up is not
 * listed twice).
 */
export function mergeRefresh(shown: readonly SessionSummary[], fresh: readonly SessionSummary[], refreshed: number): SessionSummary[] {
  const ids = new Set(fresh.map((s) => s.id));
  return [...fresh, ...shown.slice(refreshed).filter((s) => !ids.has(s.id))];
}

/** The list with a next page appended (sessions already listed are not listed twice). */
export function appendPage(shown: readonly SessionSummary[], page: readonly SessionSummary[]): SessionSummary[] {
  const ids = new Set(shown.map((s) => s.id));
  return [...shown, ...page.filter((s) => !ids.has(s.id))];
}

/** Whether the list should be polled often: a listed session runs. */
export function anyRunning(sessions: readonly SessionSummary[]): boolean {
  return sessions.some((s) => s.status === "running");
}

/** A duration in milliseconds, short: `850 ms`, `12 s`, `3 m 05 s`, `2 h 04 m`, `3 d 2 h`. */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return "–";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} m ${String(s % 60).padStart(2, "0")} s`;
  const h = Math.floor(m / 60);
  if (h < 24) return `${h} h ${String(m % 60).padStart(2, "0")} m`;
  return `${Math.floor(h / 24)} d ${h % 24} h`;
}

/** How long ago `then` was at `now` (ISO times): `just now`, `5 s ago`, `3 min ago`, `2 h ago`, `4 d ago`. */
export function formatAgo(then: string, now: number): string {
  const ms = now - Date.parse(then);
  if (!Number.isFinite(ms)) return "?";
  if (ms < 2000) return "just now";
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s} s ago`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ago`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h} h ago`;
  return `${Math.floor(h / 24)} d ago`;
}

/** A session's duration: from its first event to its last. */
export function durationOf(session: Pick<SessionSummary, "created" | "lastEvent">): number {
  return Date.parse(session.lastEvent) - Date.parse(session.created);
}

/** A token count, short: `950`, `12.3k`, `4.1M`. */
export function formatTokens(n: number): string {
  if (n < 1000) return String(n);
  if (n < 1_000_000) return `${(n / 1000).toFixed(n < 10_000 ? 1 : 0)}k`;
  return `${(n / 1_000_000).toFixed(1)}M`;
}

/** A cost in US dollars: `$0` for none, four decimals below a cent, two above. */
export function formatCost(usd: number): string {
  if (!(usd > 0)) return "$0";
  if (usd < 0.01) return `$${usd.toFixed(4)}`;
  return `$${usd.toFixed(2)}`;
}

/** The tokens a session used: input and output. */
export function tokensOf(session: Pick<SessionSummary, "usage">): number {
  return session.usage.inputTokens + session.usage.outputTokens;
}

/** A score, short: `1`, `0.82`, `0.5`, `1234`. */
export function formatScore(value: number): string {
  if (!Number.isFinite(value)) return "–";
  if (Number.isInteger(value)) return String(value);
  if (Math.abs(value) >= 100) return String(Math.round(value));
  return String(Number(value.toFixed(2)));
}

/** A session's online scores, by scorer name. */
export function scoresOf(session: Pick<SessionSummary, "scores">): [string, number][] {
  return Object.entries(session.scores ?? {})
    .filter((entry): entry is [string, number] => typeof entry[1] === "number")
    .sort(([a], [b]) => a.localeCompare(b));
}

/** What people said of a session, short: `👍 2 👎 1` (the thumbs given), or `1 note` without any. */
export function formatThumbs(said: AnnotationSummary): string {
  const parts: string[] = [];
  if (said.up > 0) parts.push(`👍 ${said.up}`);
  if (said.down > 0) parts.push(`👎 ${said.down}`);
  if (parts.length === 0) parts.push(`${said.count} annotation${said.count === 1 ? "" : "s"}`);
  return parts.join(" ");
}

/** Adds the names of the scorers and the labels `sessions` carry to those seen before. */
export function seenFeedback(sessions: readonly SessionSummary[], scorers: Set<string>, labels: Set<string>): void {
  for (const session of sessions) {
    for (const name of Object.keys(session.scores ?? {})) scorers.add(name);
    for (const label of session.annotations?.labels ?? []) labels.add(label);
  }
}
