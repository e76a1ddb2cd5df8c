// The timeline: one row per position (or, in the compact view, one per agent call), absolutely
// placed in a virtualized scroller; which rows are on screen, and each row's content.

import type { Recorded } from "@openharness/client";
import { type Tape, callFigures } from "../tape";
import { el } from "../tree";
import { type View, compactRows, matchesBetween, rowOf } from "../view";

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
  /** The session runs: an open call's elapsed time ticks (else an open call is just open). */
  running: boolean;
  /** Seqs not read yet are added here. */
  wanted: number[];
}

/** What the timeline shows: the open session's tape, a fork's inherited events, the view. */
export interface TimelineSource {
  tape: Tape | null;
  inherited: Tape | null;
  view: View;
  /** The session runs now. */
  running: boolean;
}

/**
 * The timeline panel: a virtualized scroller of rows (one per position, or one per agent call
 * in the compact view; a fork's inherited rows first), rebuilt only when what is on screen
 * changed — a step only moves the cursor's class.
 */
export class Timeline {
  /** In the compact view, the agent calls expanded (by their start seq). */
  readonly expanded = new Set<number>();
  private expandedVersion = 0;
  private matchesVersion = 0;
  private rowsKey = "";
  private compactIndex: Int32Array | null = null;
  private compactKey = "";

  constructor(
    private readonly $: { scroller: HTMLElement; spacer: HTMLElement; rows: HTMLElement },
    private readonly source: () => TimelineSource,
    private readonly fail: (error: unknown) => void,
  ) {}

  private get tape(): Tape | null {
    return this.source().tape;
  }

  private get inherited(): Tape | null {
    return this.source().inherited;
  }

  private get view(): View {
    return this.source().view;
  }

  /** A session closed: no call expanded, the rows rebuilt. */
  reset(): void {
    this.expanded.clear();
    this.expandedVersion++;
    this.matchesVersion++;
  }

  /** The search's matches changed. */
  matchesChanged(): void {
    this.matchesVersion++;
  }

  /** The rows are rebuilt at the next render. */
  invalidate(): void {
    this.rowsKey = "";
  }

  /** Expands or collapses the agent call that starts at `start`. */
  toggleGroup(start: number): void {
    if (this.expanded.has(start)) this.expanded.delete(start);
    else this.expanded.add(start);
    this.expandedVersion++;
    this.size();
    this.render();
  }

  scrollToCursor(center: boolean): void {
    const scroller = this.$.scroller;
    const top = this.rowOf(this.view.position) * ROW;
    const height = scroller.clientHeight || 600;
    if (center) scroller.scrollTop = Math.max(0, top - height / 2);
    else if (top < scroller.scrollTop + ROW) scroller.scrollTop = Math.max(0, top - ROW);
    else if (top + 2 * ROW > scroller.scrollTop + height) scroller.scrollTop = top + 2 * ROW - height;
  }

  render(): void {
    const tape = this.tape;
    if (!tape) {
      this.$.rows.replaceChildren();
      return;
    }
    const scroller = this.$.scroller;
    const rowCount = this.rowCount();
    const firstRow = Math.max(0, Math.floor(scroller.scrollTop / ROW) - OVERSCAN);
    const lastRow = Math.min(rowCount - 1, Math.ceil((scroller.scrollTop + (scroller.clientHeight || 600)) / ROW) + OVERSCAN);
    const cursorRow = this.rowOf(this.view.position);
    // The same rows as last time: only the cursor moves (a step), nothing is rebuilt.
    const inherited = this.inherited;
    const inheritedRows = this.inheritedRows();
    const key = `${tape.session}:${firstRow}:${lastRow}:${tape.version}:${tape.scanned}:${this.matchesVersion}:${this.view.compact}:${this.expandedVersion}:${inheritedRows}:${inherited?.version ?? 0}:${this.source().running}`;
    if (key === this.rowsKey) {
      this.$.rows.querySelector(".row.cursor")?.classList.remove("cursor");
      this.$.rows.querySelector(`.row[data-row="${cursorRow}"]`)?.classList.add("cursor");
      return;
    }
    this.rowsKey = key;
    const first = this.positionAt(firstRow);
    const last = this.positionAt(lastRow);
    const matches = matchesBetween(this.view.matches, first, last);
    const rows: HTMLElement[] = [];
    const wanted: number[] = [];
    const inheritedWanted: number[] = [];
    for (let index = firstRow; index <= lastRow; index++) {
      if (inherited && index < inheritedRows) {
        rows.push(inheritedRow(inherited, index, index === inheritedRows - 1, inheritedWanted));
        continue;
      }
      const position = this.positionAt(index);
      rows.push(
        eventRow(index, position, {
          tape,
          cursor: index === cursorRow,
          match: position > 0 && matches.has(position - 1),
          compact: this.view.compact,
          expanded: this.expanded,
          inheritedRows: inherited ? inheritedRows : null,
          running: this.source().running,
          wanted,
        }),
      );
    }
    this.$.rows.replaceChildren(...rows);
    this.tickElapsed();
    if (inherited && inheritedWanted.length > 0) {
      void inherited.ensure(Math.min(...inheritedWanted), Math.max(...inheritedWanted) + 1).catch((error: unknown) => this.fail(error));
    }
    if (wanted.length > 0) {
      // Contiguous in the full view; in the compact view only the pages of the rows shown.
      const reads = this.view.compact ? wanted.map((seq) => tape.ensure(seq, seq + 1)) : [tape.ensure(first - 1, last)];
      void Promise.all(reads).catch((error: unknown) => this.fail(error));
    }
  }

  private ticker: ReturnType<typeof setInterval> | null = null;

  /**
   * While a running call is on screen, its elapsed time is rewritten every 250 ms in place (no
   * row is rebuilt); the timer stops when none is shown.
   */
  private tickElapsed(): void {
    const running = () => this.$.rows.querySelectorAll<HTMLElement>(".figures[data-running]");
    if (running().length === 0 || this.ticker !== null) return;
    this.ticker = setInterval(() => {
      const shown = running();
      const tape = this.tape;
      if (shown.length === 0 || !tape) {
        clearInterval(this.ticker!);
        this.ticker = null;
        return;
      }
      const now = Date.now();
      for (const span of shown) {
        const group = tape.groups.get(Number(span.dataset.running));
        if (group) span.textContent = callFigures(group, group.endedAt === null ? now : null);
      }
    }, 250);
  }

  size(): void {
    this.$.spacer.style.height = `${this.rowCount() * ROW}px`;
  }

  /** The positions shown in the compact view, rebuilt when the groups or the toggles change. */
  compactRows(): Int32Array {
    const tape = this.tape!;
    const key = `${tape.session}:${tape.len}:${tape.scanned}:${this.expandedVersion}`;
    if (this.compactIndex && this.compactKey === key) return this.compactIndex;
    this.compactIndex = compactRows(tape.len, (seq) => tape.groupAt(seq), this.expanded);
    this.compactKey = key;
    return this.compactIndex;
  }

  /** How many rows the inherited events take (a fork's parent's events before its fork point). */
  private inheritedRows(): number {
    return this.inherited?.len ?? 0;
  }

  private rowCount(): number {
    const tape = this.tape;
    if (!tape) return 0;
    return this.inheritedRows() + (this.view.compact ? this.compactRows().length : tape.len + 1);
  }

  /** The position a row shows (0 for an inherited row: they come before the fork's own). */
  private positionAt(row: number): number {
    const own = row - this.inheritedRows();
    if (own < 0) return 0;
    return this.view.compact ? (this.compactRows()[own] ?? 0) : own;
  }

  /** The row showing `position`: in the compact view, a collapsed call's row for its events. */
  rowOf(position: number): number {
    return this.inheritedRows() + this.ownRowOf(position);
  }

  /** The row showing `position` among the fork's own rows (all rows for a session no fork). */
  ownRowOf(position: number): number {
    if (!this.view.compact) return position;
    return rowOf(this.compactRows(), position);
  }
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
      const span = info.end === null ? "· open" : `→ ${info.end + 1}`;
      if (context.compact) {
        const open = context.expanded.has(seq);
        const toggle = el("button", "toggle", open ? "▾" : "▸");
        toggle.dataset.toggle = String(seq);
        toggle.title = open ? "collapse this call" : "expand this call";
        row.classList.toggle("collapsed", !open);
        row.insertBefore(toggle, row.children[1] ?? null);
      }
      const chip = el("span", `call ${info.outcome ?? "open"}`, `${info.agent} ${span}${info.outcome ? ` · ${info.outcome}` : ""}`);
      chip.title = `${info.count} events${info.end === null ? " so far" : `, up to position ${info.end + 1}`}`;
      row.append(chip);
      const ticking = info.end === null && context.running;
      const figures = el("span", "figures", callFigures(info, ticking ? Date.now() : null));
      if (ticking) figures.dataset.running = String(seq);
      row.append(figures);
    }
  } else {
    const via = protocolOf(event);
    if (via) {
      const badge = el("span", "via", via);
      badge.title = `this turn was started through ${via}`;
      row.append(badge);
    }
    row.append(el("span", "summary", summarize(event)));
  }
  return row;
}

/**
 * The protocol that started a turn, as its input event records it (`via`: `open-responses`,
 * `ag-ui`, `a2a`), or null.
 */
export function protocolOf(event: { name: string; payload: unknown }): string | null {
  if (event.name !== "user:input" && event.name !== "input:received" && event.name !== "input:queued") return null;
  const via = (event.payload as { via?: unknown } | null)?.via;
  return typeof via === "string" && via.length > 0 ? via : null;
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
