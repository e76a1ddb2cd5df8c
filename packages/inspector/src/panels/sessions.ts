// The session list: every session with its status and length, forks under the session they
// were forked from (a fork whose parent is gone at the top level), newest first.

import type { SessionSummary } from "@openharness/client";
import { el } from "../tree";
import { addressOf, linkTo } from "../view";

export function renderSessions(box: HTMLElement, sessions: readonly SessionSummary[], selected: string | null): void {
  const children = new Map<string | null, SessionSummary[]>();
  const ids = new Set(sessions.map((s) => s.id));
  for (const session of sessions) {
    const parent = session.parent && ids.has(session.parent) ? session.parent : null;
    const list = children.get(parent) ?? [];
    list.push(session);
    children.set(parent, list);
  }
  for (const list of children.values()) list.sort((a, b) => b.created.localeCompare(a.created));
  const list = el("ul", "tree");
  const add = (into: HTMLElement, parent: string | null, depth: number): void => {
    for (const session of children.get(parent) ?? []) {
      const item = el("li", "session" + (session.id === selected ? " selected" : ""));
      item.dataset.session = session.id;
      item.style.setProperty("--depth", String(depth));
      const link = document.createElement("a");
      link.href = linkTo(location, addressOf(session.id));
      link.append(
        el("span", `badge ${session.status}`, session.status),
        el("span", "name", session.workflow ?? "?"),
        el("span", "len", `${session.len}`),
      );
      link.title = `${session.id}\ncreated ${session.created}${session.parent ? `\nforked from ${session.parent}` : ""}`;
      item.append(link, el("div", "id", (depth > 0 ? "↳ fork " : "") + session.id.slice(-12)));
      into.append(item);
      add(into, session.id, depth + 1);
    }
  };
  add(list, null, 0);
  if (sessions.length === 0) list.append(el("li", "empty", "No sessions yet."));
  box.replaceChildren(list);
}
