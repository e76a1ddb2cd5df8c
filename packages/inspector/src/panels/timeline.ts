// The timeline's rows: one per position (or, in the compact view, one per agent call), absolutely
// placed in a virtualized scroller. The page decides which rows are on screen; these build them.

import type { Recorded } from "@openharness/client";
import type { Tape } from "../tape";
import { el } from "../tree";

/** The height of a row, in pixels. */
export const ROW = 24;
/** Rows built beyond the screen on each side. */
export const OVERSCAN = 12;

export interface RowContext {
  tape: Tape;
  /** The row is the cursor's. */
  cursor: boolean;
  /** Its event matches the search. */
  match: boolean;
  compact: boolean;
  /** The agent calls expanded in the compact view (by their start seq). */
  expanded: ReadonlySet<number>;
  /** For a fork: how many inherited rows come before its own (position 0 is its fork point). */
  inheritedRows: number | null;
  /** Seqs not read yet are added here. */
  wanted: number[];
}

/** The row at `index` showing `position` of the open session. */
export function eventRow(index: number, position: number, context: RowContext): HTMLElement {
  const { tape } = context;
  const row = el("div", "row");
  row.style.top = `${index * ROW}px`;
  row.dataset.position = String(position);
  row.dataset.row = String(index);
  if (context.cursor) row.classList.add("cursor");
  if (position === 0) {
    row.classList.add("initial");
    const label = context.inheritedRows !== null ? `(fork point: the parent's state at ${context.inheritedRows})` : "(initial state)";
    row.append(el("span", "seq", "0"), el("span", "name", label));
    return row;
  }
  const seq = position - 1;
  const event = tape.events[seq];
  row.append(el("span", "seq", String(position)));
  if (!event) {
    context.wanted.push(seq);
    row.classList.add("pending");
    row.append(el("span", "name", "…"));
    return row;
  }
  if (context.match) row.classList.add("match");
  const group = tape.groupAt(seq);
  if (group !== null && group >= 0) {
    const info = tape.groups.get(group);
    row.classList.add("grouped");
    row.dataset.g = String(group % 7);
    if (group === seq && info) row.classList.add("group-start");
    if (info && info.end === seq) row.classList.add("group-end");
  }
  row.append(el("span", "time", event.timestamp.slice(11, 23)), el("span", `name ${noun(event.name)}`, event.name));
  if (event.name === "agent:started" && group === seq) {
    const info = tape.groups.get(seq);
    if (info) {
      const span = info.end === null ? `${info.count} events, open` : `${info.count} events → ${info.end + 1}`;
      if (context.compact) {
        const open = context.expanded.has(seq);
        const toggle = el("button", "toggle", open ? "▾" : "▸");
        toggle.dataset.toggle = String(seq);
        toggle.title = open ? "collapse this call" : "expand this call";
        row.classList.toggle("collapsed", !open);
        row.insertBefore(toggle, row.children[1] ?? null);
      }
      row.append(el("span", `call ${info.outcome ?? "open"}`, `${info.agent} · ${span}${info.outcome ? ` · ${info.outcome}` : ""}`));
    }
  } else {
    row.append(el("span", "summary", summarize(event)));
  }
  return row;
}

/**
 * The row of inherited event `seq` (a fork's parent's, before the fork point), dimmed; `last`
 * marks the one right before the fork's own rows. An event not read yet is added to `wanted`.
 */
export function inheritedRow(inherited: Tape, seq: number, last: boolean, wanted: number[]): HTMLElement {
  const row = el("div", "row inherited");
  row.style.top = `${seq * ROW}px`;
  row.dataset.row = String(seq);
  row.dataset.parentPosition = String(seq + 1);
  row.title = `inherited from ${inherited.session} (position ${seq + 1} there): click to open it there`;
  if (last) row.classList.add("last");
  row.append(el("span", "seq", `↑${seq + 1}`));
  const event = inherited.events[seq];
  if (!event) {
    wanted.push(seq);
    row.classList.add("pending");
    row.append(el("span", "name", "…"));
    return row;
  }
  row.append(el("span", "time", event.timestamp.slice(11, 23)), el("span", `name ${noun(event.name)}`, event.name), el("span", "summary", summarize(event)));
  return row;
}

/** A class for the event name's noun, for colours. */
export function noun(name: string): string {
  const head = name.split(":")[0] ?? "";
  return ["agent", "text", "tool", "user", "input", "workflow", "error", "session"].includes(head) ? `n-${head}` : "n-other";
}

/** One line saying what an event holds: its text, delta, reply… or its payload as JSON. */
export function summarize(event: Pick<Recorded, "payload">): string {
  const payload = event.payload as Record<string, unknown> | null;
  if (payload && typeof payload === "object") {
    for (const key of ["text", "delta", "reply", "prompt", "message", "toolName", "title", "reason"]) {
      const value = payload[key];
      if (typeof value === "string") return value.length > 160 ? value.slice(0, 160) + "…" : value;
    }
  }
  const text = JSON.stringify(payload);
  return text === undefined ? "" : text.length > 160 ? text.slice(0, 160) + "…" : text;
}
