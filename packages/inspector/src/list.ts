// The session list's state and rules, without a page: the filter the user set (search, status,
// workflow, sort) and the `GET /sessions` query it asks for, how the pages read so far merge
// with a refresh, and how a row says its times, duration, tokens and cost.

import type { SessionSort, SessionStatus, SessionSummary, SessionsQuery } from "@openharness/client";

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
}

export function initialFilter(): ListFilter {
  return { search: "", status: "", workflow: "", sort: "recent" };
}

/**
 * The query for the page after `after` (the first page without it) of `limit` sessions
 * (clamped to 1..1000): only what the filter sets is sent, the search trimmed.
 */
export function queryOf(filter: ListFilter, after?: string | null, limit = PAGE): SessionsQuery {
  const query: SessionsQuery = { limit: Math.min(MAX_LIMIT, Math.max(1, Math.floor(limit))) };
  const search = filter.search.trim();
  if (search !== "") query.search = search;
  if (filter.status !== "") query.status = [filter.status];
  if (filter.workflow !== "") query.workflow = filter.workflow;
  if (filter.sort !== "recent") query.sort = filter.sort;
  if (after) query.after = after;
  return query;
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
