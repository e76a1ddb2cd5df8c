// The review queue's rules, without a page: its address (`#queue`, the list's filter, and the
// session under review: `#queue&scorer=helpful&sort=lowestScore&session=<id>&at=<position>`),
// the list filter it walks (the page's, with nobody's annotation yet), and which session comes
// next (the first listed that was neither annotated nor skipped in this review).

import type { SessionSummary } from "@openharness/client";
import { type ListFilter, filterFromParams, filterParams } from "./list";

/** What a `#queue…` address asks: the list's filter (what it sets of it). */
export interface QueueAddress {
  filter: Partial<ListFilter>;
}

/** The queue an address asks for, or null when it is no queue's (`#session=…`, empty). */
export function parseQueue(hash: string): QueueAddress | null {
  const params = new URLSearchParams(hash.replace(/^#/, ""));
  if (!params.has("queue")) return null;
  const filter = filterFromParams(params);
  delete filter.annotated;
  return { filter };
}

/** The filter the queue lists with: the list's, the sessions nobody annotated yet. */
export function queueFilter(filter: ListFilter): ListFilter {
  return { ...filter, annotated: "no" };
}

/** The queue's address: its filter, and the session under review (at a position). */
export function queueAddress(filter: ListFilter, session?: string | null, at?: number): string {
  const params = filterParams({ ...filter, annotated: "" });
  let address = "#queue";
  const rest = params.toString();
  if (rest !== "") address += `&${rest}`;
  if (session) address += `&session=${encodeURIComponent(session)}`;
  if (session && at !== undefined) address += `&at=${at}`;
  return address;
}

/** The next session to review: the first listed that was not annotated or skipped in this review. */
export function nextInQueue(sessions: readonly SessionSummary[], passed: ReadonlySet<string>): SessionSummary | null {
  return sessions.find((session) => !passed.has(session.id) && !session.annotations) ?? null;
}

/** How many are left, as the queue bar says it: `12 to review`, `12 to review (2 skipped)`. */
export function remaining(total: number, skipped: number): string {
  if (total === 0) return "Nothing left to review";
  return `${total} to review${skipped > 0 ? ` (${skipped} skipped)` : ""}`;
}
