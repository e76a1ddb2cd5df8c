// Forks as a tree: the open session's lineage (its root, and every fork below it, a few levels
// and a few hundred sessions at most), each one a button that opens it; and the fork-versus-parent view —
// where two sessions part (`GET /sessions/{id}/compare?with=`), what differs in the event that
// parts them and in the states just after it, and the events that follow on each side.

import type { JsonPatchOperation, OpenHarnessClient, Recorded, SessionComparison, SessionSummary } from "@openharness/client";
import { el } from "../tree";
import { opsList } from "./patch";
import { noun, summarize } from "./timeline";

/** How far up a chain of parents is followed. */
const MAX_UP = 32;
/** How many forks are read below the root, in all. */
const MAX_NODES = 300;
/** Forks read per session. */
const CHILDREN = 100;
/** Events shown after the divergence on each side. */
const FOLLOWING = 30;

/** One session of the tree and the forks made from it. */
export interface LineageNode {
  summary: Pick<SessionSummary, "id" | "title" | "status" | "len">;
  children: LineageNode[];
  /** More forks of it than were read. */
  more: number;
}

/** The tree the session `id` belongs to: up to its root, then down through the forks. */
export async function readLineage(client: OpenHarnessClient, id: string): Promise<LineageNode> {
  let rootId = id;
  for (let i = 0; i < MAX_UP; i++) {
    const summary = await client.getSession(rootId);
    if (!summary.parent) break;
    rootId = summary.parent;
  }
  const root = await client.getSession(rootId);
  const tree: LineageNode = { summary: root, children: [], more: 0 };
  let budget = MAX_NODES;
  let level = [tree];
  while (level.length > 0 && budget > 0) {
    const next: LineageNode[] = [];
    for (const node of level) {
      if (budget <= 0) break;
      const page = await client.querySessions({ forkOf: node.summary.id, sort: "oldest", limit: Math.min(CHILDREN, budget) });
      node.children = page.sessions.map((summary) => ({ summary, children: [], more: 0 }));
      node.more = page.total - page.sessions.length;
      budget -= node.children.length;
      next.push(...node.children);
    }
    level = next;
  }
  return tree;
}

/** The tree as nested lists; the open session marked, each session a link to it. */
export function renderLineage(box: HTMLElement, tree: LineageNode, open: string): void {
  const list = el("ul", "lineage");
  list.append(nodeView(tree, open));
  const forks = count(tree) - 1;
  box.replaceChildren(el("div", "hint", forks === 0 ? "No forks: this session is its own lineage." : `${forks} fork${forks === 1 ? "" : "s"} in this lineage.`), list);
}

function count(node: LineageNode): number {
  return 1 + node.children.reduce((sum, child) => sum + count(child), 0);
}

function nodeView(node: LineageNode, open: string): HTMLElement {
  const item = el("li", "lineage-node");
  const { id, title, status, len } = node.summary;
  const link = el("button", id === open ? "link session-link open" : "link session-link", `${id.slice(-12)}`);
  link.dataset.session = id;
  link.title = id;
  item.append(link, el("span", "hint", ` ${status} · ${len} events${title ? ` · ${title}` : ""}`));
  if (id !== open) {
    const compare = el("button", "link compare-with", "compare");
    compare.dataset.compareWith = id;
    compare.title = `compare the open session with ${id}`;
    item.append(" ", compare);
  }
  if (node.children.length > 0) {
    const children = el("ul", "");
    for (const child of node.children) children.append(nodeView(child, open));
    if (node.more > 0) children.append(el("li", "hint", `+${node.more} more forks`));
    item.append(children);
  }
  return item;
}

/** The events after the divergence on one side, read for the view. */
export interface Following {
  session: string;
  /** The position of the first one there. */
  from: number;
  events: Recorded[];
}

/** The events of each side from its divergent event on (none for a side that had ended). */
export async function readFollowing(client: OpenHarnessClient, comparison: SessionComparison): Promise<[Following | null, Following | null]> {
  const side = async (at: { session: string; position: number } | null | undefined): Promise<Following | null> => {
    if (!at) return null;
    const page = await client.events(at.session, { after: at.position - 2 < 0 ? null : at.position - 2, limit: FOLLOWING });
    return { session: at.session, from: at.position, events: page.events };
  };
  const divergence = comparison.divergence;
  return Promise.all([side(divergence?.aAt), side(divergence?.bAt)]);
}

/**
 * The comparison: the common ancestor, how many events agree, the event where they part on
 * each side (a link to it), the payload and state patches, then the events that follow.
 */
export function renderComparison(box: HTMLElement, comparison: SessionComparison, following: [Following | null, Following | null]): void {
  const { a, b, ancestor, agree, aLen, bLen, divergence } = comparison;
  const head = el("div", "compare-head");
  head.append(el("div", "", `A ${a.slice(-12)} (${aLen} events from the root) · B ${b.slice(-12)} (${bLen})`));
  if (ancestor) {
    head.append(el("div", "hint", `common ancestor ${ancestor.session.slice(-12)}: A leaves it at position ${ancestor.aFrom}, B at ${ancestor.bFrom}`));
  } else head.append(el("div", "hint", "no common ancestor"));
  if (!divergence) {
    head.append(el("div", "compare-verdict same", `They agree: all ${agree} events match.`));
    box.replaceChildren(head);
    return;
  }
  head.append(el("div", "compare-verdict", `${agree} events agree; they part at position ${agree + 1} (counted from the root).`));
  const sides = el("div", "compare-sides");
  sides.append(sideView("A", divergence.a, divergence.aAt ?? null, following[0]), sideView("B", divergence.b, divergence.bAt ?? null, following[1]));
  const patches = el("div", "compare-patches");
  if (divergence.payloadPatch) patches.append(patchView("payload, A → B", divergence.payloadPatch));
  if (divergence.statePatch) patches.append(patchView("state just after it, A → B", divergence.statePatch));
  else patches.append(el("div", "hint", "(states not compared: a workflow is not hosted here)"));
  box.replaceChildren(head, patches, sides);
}

function sideView(
  label: string,
  event: { name: string; payload: unknown } | null,
  at: { session: string; position: number } | null,
  following: Following | null,
): HTMLElement {
  const side = el("div", "compare-side");
  side.dataset.side = label;
  const title = el("div", "compare-side-title", `${label}: `);
  if (event && at) {
    const link = el("button", "link session-link", `${event.name} at position ${at.position} of ${at.session.slice(-12)}`);
    link.dataset.session = at.session;
    link.dataset.at = String(at.position);
    title.append(link);
  } else title.append(el("span", "hint", "(had ended)"));
  side.append(title);
  if (following) {
    const list = el("ol", "compare-events");
    following.events.forEach((recorded, i) => {
      const item = el("li", "");
      item.append(el("span", "seq", String(following.from + i)), el("span", `name ${noun(recorded.name)}`, recorded.name), el("span", "summary", summarize(recorded)));
      list.append(item);
    });
    side.append(list);
  }
  return side;
}

function patchView(title: string, patch: unknown): HTMLElement {
  const box = el("div", "compare-patch");
  box.append(el("div", "compare-patch-title", title));
  const ops = Array.isArray(patch) ? (patch as JsonPatchOperation[]) : [];
  if (ops.length === 0) {
    box.append(el("div", "hint", "no difference"));
    return box;
  }
  box.append(...opsList(ops, 100));
  return box;
}
