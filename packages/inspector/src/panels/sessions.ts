// The session list: the sessions the server answered for the filter (searched, filtered and
// sorted by `GET /sessions`, a page at a time), one row each with its title, workflow and
// agents, status, last event, duration, length, tokens and cost; a fork links to its parent.
// The filter's controls (search, status, workflow, sort) and "load more" are in the page; this
// module fills the rows, the count and the workflow choices.

import type { SessionSummary } from "@openharness/client";
import * as list from "../list";
import { el } from "../tree";
import { addressOf, linkTo } from "../view";

export interface SessionsElements {
  sessionList: HTMLElement;
  sessionCount: HTMLElement;
  sessionMore: HTMLButtonElement;
  sessionWorkflow: HTMLSelectElement;
}

export interface ListShown {
  sessions: readonly SessionSummary[];
  total: number;
  more: boolean;
  selected: string | null;
  /** The list's answer is under way (a new filter). */
  loading: boolean;
  /** The search the rows answer (`data-search` of the list). */
  search: string;
}

export function renderSessions($: SessionsElements, shown: ListShown, now = Date.now()): void {
  const items = shown.sessions.map((session) => row(session, session.id === shown.selected, now));
  if (shown.sessions.length === 0) items.push(el("li", "empty", shown.loading ? "Loading…" : "No sessions match."));
  $.sessionList.replaceChildren(...items);
  $.sessionList.dataset.count = String(shown.sessions.length);
  $.sessionList.dataset.search = shown.search;
  $.sessionCount.textContent = `${shown.sessions.length} of ${shown.total} session${shown.total === 1 ? "" : "s"}`;
  $.sessionMore.hidden = !shown.more;
}

function row(session: SessionSummary, selected: boolean, now: number): HTMLElement {
  const item = el("li", "session" + (selected ? " selected" : "") + (session.parent ? " fork" : ""));
  item.dataset.session = session.id;
  const link = document.createElement("a");
  link.className = "open";
  link.href = linkTo(location, addressOf(session.id));
  const title = el("span", "title" + (session.title ? "" : " untitled"), session.title ?? "(no input)");
  const agents = session.agents.length > 0 ? ` · ${session.agents.join(", ")}` : "";
  const ago = el("span", "ago", list.formatAgo(session.lastEvent, now));
  ago.title = `last event ${session.lastEvent}`;
  const facts = el("div", "facts-line");
  facts.append(
    ago,
    el("span", "duration", list.formatDuration(list.durationOf(session))),
    el("span", "len", `${session.len} ev`),
    el("span", "tokens", `${list.formatTokens(list.tokensOf(session))} tok`),
    el("span", "cost", list.formatCost(session.cost)),
  );
  const head = el("div", "head");
  head.append(el("span", `badge ${session.status}`, session.status), title);
  if (session.openRequests > 0) head.append(el("span", "open-requests", `${session.openRequests}?`));
  link.append(head, el("div", "workflow", `${session.workflow ?? "?"}${agents}`), facts);
  link.title = `${session.id}\ncreated ${session.created}\nlast event ${session.lastEvent}`;
  item.append(link);
  if (session.parent) {
    const fork = el("div", "lineage", "↳ fork of ");
    const parent = document.createElement("a");
    parent.className = "parent";
    parent.href = linkTo(location, addressOf(session.parent));
    parent.dataset.parent = session.parent;
    parent.textContent = `…${session.parent.slice(-12)}`;
    parent.title = session.parent;
    fork.append(parent);
    item.append(fork);
  }
  return item;
}

/** The workflow select's choices: every workflow seen so far, the chosen one kept. */
export function renderWorkflows(select: HTMLSelectElement, workflows: ReadonlySet<string>): void {
  const chosen = select.value;
  const names = [...workflows].sort();
  const current = [...select.options].map((o) => o.value).slice(1);
  if (current.length === names.length && current.every((name, i) => name === names[i])) return;
  const all = document.createElement("option");
  all.value = "";
  all.textContent = "All workflows";
  const options = names.map((name) => {
    const option = document.createElement("option");
    option.value = name;
    option.textContent = name;
    return option;
  });
  select.replaceChildren(all, ...options);
  select.value = chosen;
}
