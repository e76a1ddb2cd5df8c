// The view state: which session is open, where the cursor is, which way it last moved, whether
// it follows the live end, the compact view, the search and its matches. Plain data and plain
// functions (no DOM), so the rules the panels follow are unit-tested on their own.

import type { ConnectionState } from "@openharness/client";

export interface View {
  /** The open session, if any. */
  session: string | null;
  /** The cursor: position `p` is the state after event `p - 1` (0: the initial state). */
  position: number;
  /** The way the cursor last moved (reading ahead goes that way). */
  direction: 1 | -1;
  /** Follow mode: the cursor stays at the end while events arrive. */
  following: boolean;
  /** The compact view: one row per agent call (the default). */
  compact: boolean;
  /** The search of event names, and the seqs of the events it matches, in order. */
  query: string;
  matches: number[];
}

export function initialView(): View {
  return { session: null, position: 0, direction: 1, following: false, compact: true, query: "", matches: [] };
}

export function clamp(value: number, min: number, max: number): number {
  return Math.min(max, Math.max(min, value));
}

/** The view with the cursor at `position` (clamped to `0..len`); leaving the end stops following. */
export function moveTo(view: View, position: number, len: number): View {
  const target = clamp(position, 0, len);
  return {
    ...view,
    position: target,
    direction: target >= view.position ? 1 : -1,
    following: target < len ? false : view.following,
  };
}

/**
 * The position of the next (`direction` > 0) or previous match from the cursor, wrapping
 * around; null without matches. Matches are seqs: the event at seq `s` is shown at `s + 1`.
 */
export function nextMatch(matches: readonly number[], position: number, direction: number): number | null {
  if (matches.length === 0) return null;
  const current = position - 1;
  const next =
    direction > 0
      ? (matches.find((seq) => seq > current) ?? matches[0]!)
      : ([...matches].reverse().find((seq) => seq < current) ?? matches[matches.length - 1]!);
  return next + 1;
}

/** The matches among the positions `first..last` on screen (a binary search for the first). */
export function matchesBetween(matches: readonly number[], first: number, last: number): Set<number> {
  const out = new Set<number>();
  let lo = 0;
  let hi = matches.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (matches[mid]! < first - 1) lo = mid + 1;
    else hi = mid;
  }
  for (let i = lo; i < matches.length && matches[i]! < last; i++) out.add(matches[i]!);
  return out;
}

/**
 * The positions the compact view shows: 0, then each event but those inside a collapsed agent
 * call (a call shows its `agent:started` only unless expanded). `groupAt(seq)` is the seq of
 * the call's start, -1 for no call, null when not grouped yet (shown).
 */
export function compactRows(len: number, groupAt: (seq: number) => number | null, expanded: ReadonlySet<number>): Int32Array {
  const rows = new Int32Array(len + 1);
  let count = 0;
  rows[count++] = 0;
  for (let seq = 0; seq < len; seq++) {
    const group = groupAt(seq);
    if (group !== null && group >= 0 && group !== seq && !expanded.has(group)) continue;
    rows[count++] = seq + 1;
  }
  return rows.subarray(0, count);
}

/** The row of `rows` (ascending positions) showing `position`: the last at or before it. */
export function rowOf(rows: ArrayLike<number>, position: number): number {
  let lo = 0;
  let hi = rows.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (rows[mid]! <= position) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/**
 * What the address (`#session=<id>&at=<position>`, with `&compare=<other id>` to open it
 * compared with another session) asks to open.
 */
export function parseAddress(hash: string): { session: string; at: number | null; compare?: string } | null {
  const params = new URLSearchParams(hash.replace(/^#/, ""));
  const session = params.get("session");
  if (!session) return null;
  const raw = params.get("at");
  const at = raw === null ? null : Number.parseInt(raw, 10);
  const compare = params.get("compare");
  return { session, at: at !== null && Number.isFinite(at) ? at : null, ...(compare ? { compare } : {}) };
}

/** The address of a session (at a position): `#session=<id>[&at=<position>]`. */
export function addressOf(session: string, at?: number): string {
  return `#session=${encodeURIComponent(session)}${at === undefined ? "" : `&at=${at}`}`;
}

/**
 * A link to `address` in this very page: its path and query with the new fragment, so the link
 * never leaves the page whatever `<base>` it has (nested at `/harness`, a bare `#…` would
 * resolve against the base, not the page).
 */
export function linkTo(page: { pathname: string; search: string }, address: string): string {
  return `${page.pathname}${page.search}${address}`;
}

/**
 * The client's base URL for a page served at `baseURI`: the directory it is served from,
 * without the trailing slash (`http://h/harness/` → `http://h/harness`, `http://h/` → `http://h`).
 */
export function mountBase(baseURI: string): string {
  const dir = new URL(".", baseURI);
  return `${dir.origin}${dir.pathname}`.replace(/\/+$/, "");
}

/** The live follow's state as the page shows it (`body[data-live]`). */
export type LiveStatus = "connecting" | "live" | "retrying" | "stopped";

export function liveStatus(state: ConnectionState): LiveStatus {
  switch (state) {
    case "connecting":
      return "connecting";
    case "open":
      return "live";
    case "reconnecting":
      return "retrying";
    default:
      return "stopped";
  }
}
