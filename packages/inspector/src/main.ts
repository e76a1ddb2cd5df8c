// The inspector page: sessions (with lineage), a virtualized timeline of one session's events
// grouped per agent call, the event at the cursor with its cause and effects, the patch it made,
// and the state as a tree. Keyboard: j/k or arrows step, g goes to a position, / searches,
// n/N next/previous match, c jumps to the cause, f forks at the cursor, l follows live.

import { Api, ApiError, type PatchOp, type Recorded, type SessionSummary } from "./api";
import { diff } from "./diff";
import { type Follow, follow } from "./sse";
import { Tape } from "./tape";
import { el, renderTree } from "./tree";

const ROW = 24;
const OVERSCAN = 12;

const HELP: [string, string][] = [
  ["j / ↓", "step forward"],
  ["k / ↑", "step back"],
  ["PgDn / PgUp", "a screen forward / back"],
  ["Home / End", "start / end"],
  ["g", "go to a position"],
  ["/", "search event names"],
  ["n / N", "next / previous match"],
  ["c", "jump to the causing event"],
  ["f", "fork at the cursor"],
  ["l", "follow live"],
  ["x", "compact view: one row per agent call (j/k then step by row)"],
  ["o", "expand / collapse the agent call at the cursor"],
  ["i", "continue the session (input)"],
  ["?", "this help"],
];

class Inspector {
  private readonly api = new Api(new URL(".", document.baseURI));
  private sessions: SessionSummary[] = [];
  private summary: SessionSummary | null = null;
  private tape: Tape | null = null;
  /** For a fork: its parent's events before the fork point, shown dimmed before its own. */
  private inherited: Tape | null = null;
  private position = 0;
  private direction = 1;
  private live: Follow | null = null;
  /** Follow mode: the cursor stays at the end while events arrive. */
  private following = false;
  private matches: number[] = [];
  private query = "";
  private frame = 0;
  private rowsKey = "";
  /** The state the tree shows: its tape and position, and whether nothing in it is marked. */
  private shownTree: { tape: Tape; position: number; unmarked: boolean } | null = null;
  private addressTimer: ReturnType<typeof setTimeout> | undefined;
  /** The compact view: one row per agent call (expanded ones show their events). */
  private compact = false;
  private readonly expanded = new Set<number>();
  private expandedVersion = 0;
  private compactIndex: Int32Array | null = null;
  private compactKey = "";
  /** A sessions request is under way. */
  private listing = false;
  private matchesVersion = 0;
  private viewToken = 0;

  private readonly $ = {
    sessions: byId("sessions"),
    title: byId("title"),
    meta: byId("meta"),
    scroller: byId("timeline"),
    spacer: byId("spacer"),
    rows: byId("rows"),
    event: byId("event"),
    patch: byId("patch"),
    state: byId("state"),
    status: byId("status"),
    search: byId("search") as HTMLInputElement,
    matches: byId("matches"),
    goto: byId("goto") as HTMLInputElement,
    follow: byId("follow") as HTMLButtonElement,
    compact: byId("compact") as HTMLButtonElement,
    fork: byId("fork") as HTMLButtonElement,
    inputForm: byId("input-form") as HTMLFormElement,
    input: byId("input") as HTMLInputElement,
    inputHint: byId("input-hint"),
    keyDialog: byId("key-dialog") as HTMLDialogElement,
    keyForm: byId("key-form") as HTMLFormElement,
    key: byId("key") as HTMLInputElement,
    help: byId("help") as HTMLDialogElement,
    error: byId("error"),
  };

  start(): void {
    this.api.onUnauthorized = () => this.askKey();
    this.$.scroller.addEventListener("scroll", () => this.schedule(), { passive: true });
    window.addEventListener("resize", () => this.schedule());
    document.addEventListener("keydown", (event) => this.key(event));
    this.$.search.addEventListener("input", () => this.search(this.$.search.value));
    this.$.search.addEventListener("keydown", (event) => {
      if (event.key === "Enter") {
        event.preventDefault();
        this.nextMatch(event.shiftKey ? -1 : 1);
      }
    });
    this.$.goto.addEventListener("keydown", (event) => {
      if (event.key === "Enter") {
        event.preventDefault();
        const target = Number.parseInt(this.$.goto.value, 10);
        if (Number.isFinite(target)) void this.moveTo(target);
        this.$.goto.value = "";
        this.$.goto.blur();
      }
    });
    this.$.follow.addEventListener("click", () => this.toggleFollow());
    this.$.compact.addEventListener("click", () => this.toggleCompact());
    this.$.fork.addEventListener("click", () => void this.fork());
    this.$.inputForm.addEventListener("submit", (event) => {
      event.preventDefault();
      void this.send();
    });
    this.$.keyForm.addEventListener("submit", () => {
      this.api.setKey(this.$.key.value);
      void this.refreshSessions().then(() => this.openFromHash());
    });
    this.$.rows.addEventListener("click", (event) => {
      const toggle = (event.target as HTMLElement).closest<HTMLElement>("[data-toggle]");
      if (toggle?.dataset.toggle) {
        this.toggleGroup(Number(toggle.dataset.toggle));
        return;
      }
      const row = (event.target as HTMLElement).closest<HTMLElement>(".row");
      if (row?.dataset.parentPosition && this.inherited) {
        location.hash = `session=${encodeURIComponent(this.inherited.session)}&at=${row.dataset.parentPosition}`;
        return;
      }
      if (row?.dataset.position) this.moveTo(Number(row.dataset.position));
    });
    this.$.event.addEventListener("click", (event) => {
      const link = (event.target as HTMLElement).closest<HTMLElement>("[data-goto]");
      if (link?.dataset.goto) this.moveTo(Number(link.dataset.goto));
      if ((event.target as HTMLElement).closest("[data-cause]")) void this.jumpToCause();
    });
    byId("help-button").addEventListener("click", () => this.$.help.showModal());
    const helpList = byId("help-list");
    for (const [keys, what] of HELP) helpList.append(el("dt", "", keys), el("dd", "", what));
    window.addEventListener("hashchange", () => this.openFromHash());
    void this.refreshSessions().then(() => this.openFromHash());
    setInterval(() => void this.refreshSessions(), 3000);
  }

  // ---- sessions ----------------------------------------------------------------------------

  private async refreshSessions(): Promise<void> {
    this.listing = true;
    try {
      const { sessions } = await this.api.sessions();
      this.sessions = sessions;
      this.renderSessions();
      const mine = this.summary && sessions.find((s) => s.id === this.summary!.id);
      if (mine && this.summary) {
        const wasRunning = this.summary.status === "running";
        this.summary = { ...this.summary, ...mine };
        this.renderMeta();
        if (mine.status === "running" && !wasRunning && !this.live) this.startLive();
      }
    } catch (error) {
      this.fail(error);
    } finally {
      this.listing = false;
    }
  }

  private renderSessions(): void {
    const children = new Map<string | null, SessionSummary[]>();
    const ids = new Set(this.sessions.map((s) => s.id));
    for (const session of this.sessions) {
      // A fork whose parent is gone is listed at the top level.
      const parent = session.parent && ids.has(session.parent) ? session.parent : null;
      const list = children.get(parent) ?? [];
      list.push(session);
      children.set(parent, list);
    }
    for (const list of children.values()) list.sort((a, b) => b.created.localeCompare(a.created));
    const list = el("ul", "tree");
    const add = (into: HTMLElement, parent: string | null, depth: number): void => {
      for (const session of children.get(parent) ?? []) {
        const item = el("li", "session" + (session.id === this.summary?.id ? " selected" : ""));
        item.dataset.session = session.id;
        item.style.setProperty("--depth", String(depth));
        const link = document.createElement("a");
        link.href = `#session=${encodeURIComponent(session.id)}`;
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
    if (this.sessions.length === 0) list.append(el("li", "empty", "No sessions yet."));
    this.$.sessions.replaceChildren(list);
  }

  private openFromHash(): void {
    const params = new URLSearchParams(location.hash.slice(1));
    const id = params.get("session");
    const at = params.get("at");
    if (!id) return;
    const position = at === null ? null : Number.parseInt(at, 10);
    if (this.summary?.id === id) {
      if (position !== null && Number.isFinite(position) && position !== this.position) this.moveTo(position);
      return;
    }
    void this.open(id, position !== null && Number.isFinite(position) ? position : null);
  }

  /** Opens a session at `position` (its end when null). */
  private async open(id: string, position: number | null): Promise<void> {
    this.close();
    try {
      const summary = await this.api.session(id);
      this.summary = summary;
      const tape = new Tape(this.api, id, summary.len);
      this.tape = tape;
      tape.onChange = () => this.schedule();
      this.position = clamp(position ?? summary.len, 0, summary.len);
      this.following = position === null && summary.status === "running";
      if (this.sessions.some((s) => s.id === id)) this.renderSessions();
      else void this.refreshSessions();
      this.renderMeta();
      this.sizeTimeline();
      this.scrollToCursor(true);
      if (summary.parent) void this.openInherited(tape, summary.parent);
      if (tape.len > 0) await tape.ensure(this.position - 60, this.position + 60);
      if (this.tape !== tape) return;
      this.renderMeta();
      const view = this.moveTo(this.position);
      if (summary.status === "running" || this.following) this.startLive();
      // The first screen's state before anything else is read.
      await view;
      if (this.tape !== tape) return;
      // Everything else in the background: groups, search and causes then cover the session.
      const scanned = (): void => {
        this.renderMeta();
        if (this.query) this.search(this.query, false);
      };
      void tape.scan(scanned).then(scanned, (error: unknown) => this.fail(error));
    } catch (error) {
      this.fail(error);
    }
  }

  /**
   * A fork inherits its parent's events before the fork point (its state at position 0 is the
   * parent's there): they are shown dimmed above its own rows, read from the parent page by
   * page like the fork's own. A click on one opens the parent there.
   */
  private async openInherited(tape: Tape, parent: string): Promise<void> {
    try {
      await tape.ensure(0, 1);
      if (this.tape !== tape) return;
      const first = tape.events[0];
      const forkIndex = (first?.payload as { forkIndex?: unknown } | undefined)?.forkIndex;
      if (first?.name !== "session:forked" || typeof forkIndex !== "number" || forkIndex <= 0) return;
      const inherited = new Tape(this.api, parent, forkIndex, forkIndex);
      inherited.onChange = () => this.schedule();
      this.inherited = inherited;
      // The fork's rows move down by the inherited ones: keep them where they were on screen.
      this.sizeTimeline();
      this.$.scroller.scrollTop += forkIndex * ROW;
      this.rowsKey = "";
      this.renderTimeline();
    } catch (error) {
      this.fail(error);
    }
  }

  private close(): void {
    this.live?.stop();
    this.live = null;
    this.inherited?.dispose();
    this.inherited = null;
    this.tape?.dispose();
    this.tape = null;
    this.summary = null;
    this.matches = [];
    this.matchesVersion++;
    this.expanded.clear();
    this.expandedVersion++;
    this.$.matches.textContent = "";
  }

  private renderMeta(): void {
    const summary = this.summary;
    const tape = this.tape;
    if (!summary || !tape) {
      this.$.title.textContent = "No session open";
      this.$.meta.textContent = "Pick a session on the left.";
      return;
    }
    this.$.title.textContent = `${summary.workflow ?? "?"} · ${summary.id}`;
    const parts = [`${summary.status}`, `${tape.len} events`];
    if (summary.parent) parts.push(`fork of ${summary.parent.slice(-12)}`);
    if (tape.scanned < tape.len) parts.push(`reading ${Math.floor((tape.scanned / Math.max(1, tape.len)) * 100)}%`);
    this.$.meta.textContent = parts.join(" · ");
    this.$.follow.classList.toggle("on", this.following);
    const waiting = summary.status === "waiting";
    this.$.inputHint.textContent = waiting ? "answers the open input request" : summary.status === "running" ? "a turn is running" : "starts a new turn";
  }

  // ---- cursor ------------------------------------------------------------------------------

  /** Moves the cursor; the promise settles when the state and patch there are shown. */
  private moveTo(position: number): Promise<void> {
    const tape = this.tape;
    if (!tape) return Promise.resolve();
    const target = clamp(position, 0, tape.len);
    this.direction = target >= this.position ? 1 : -1;
    this.position = target;
    if (target < tape.len) this.following = false;
    document.body.dataset.position = String(target);
    // The address follows the cursor, written once the keys pause (not on every step).
    clearTimeout(this.addressTimer);
    this.addressTimer = setTimeout(() => {
      if (this.tape === tape) history.replaceState(null, "", `#session=${encodeURIComponent(tape.session)}&at=${this.position}`);
    }, 150);
    this.scrollToCursor(false);
    this.renderTimeline();
    this.renderEvent();
    return this.loadView(target);
  }


  private scrollToCursor(center: boolean): void {
    const scroller = this.$.scroller;
    const top = this.rowOf(this.position) * ROW;
    const height = scroller.clientHeight || 600;
    if (center) scroller.scrollTop = Math.max(0, top - height / 2);
    else if (top < scroller.scrollTop + ROW) scroller.scrollTop = Math.max(0, top - ROW);
    else if (top + 2 * ROW > scroller.scrollTop + height) scroller.scrollTop = top + 2 * ROW - height;
  }

  /** The state and patch at `position`: from the cache, else read (one request for a window). */
  private async loadView(position: number): Promise<void> {
    const tape = this.tape;
    if (!tape) return;
    const token = ++this.viewToken;
    const stale = (): boolean => token !== this.viewToken || this.tape !== tape;
    if (tape.len === 0) {
      // A session whose first turn has just started: the server has nothing to fold yet (its
      // states answer 404 until the first event); live follow brings the events.
      this.$.patch.replaceChildren(el("div", "hint", "No events yet."));
      this.$.state.replaceChildren(el("div", "hint", "No events yet."));
      this.shownTree = null;
      return;
    }
    try {
      let here = tape.stateAt(position);
      let before = position > 0 ? tape.stateAt(position - 1) : here;
      // Nothing read here yet (the first screen, a goto, or steps faster than the reading
      // ahead): ask for just the two states this view needs, then for the window around them
      // once they are on screen, so the first paint never waits for 64 states.
      const cold = !here.known || !before.known;
      if (cold) {
        document.body.dataset.loading = "state";
        this.$.state.classList.add("loading");
        await tape.loadPositions(position > 0 ? [position - 1, position] : [position]);
        if (stale()) return;
        here = tape.stateAt(position);
        before = position > 0 ? tape.stateAt(position - 1) : here;
      }
      let patch: PatchOp[] | undefined = tape.patchAt(position);
      if (!patch && here.known && before.known) {
        patch = position === 0 ? [] : diff(before.state, here.state);
        tape.rememberPatch(position, patch);
      }
      if (!patch) patch = await tape.loadPatch(position);
      if (stale()) return;
      this.renderPatch(patch);
      // The tree on screen already shows this state, nothing marked (a step over an event that
      // changed nothing, such as a text delta): keep it.
      const shown = this.shownTree;
      const sameState =
        shown !== null &&
        shown.tape === tape &&
        ((position === shown.position + 1 && patch.length === 0) || (position === shown.position - 1 && tape.patchAt(shown.position)?.length === 0));
      if (!(sameState && shown.unmarked && patch.length === 0)) {
        if (here.known) renderTree(this.$.state, here.state, new Set(patch.map((op) => op.path)));
        else this.$.state.textContent = "(state not available)";
      }
      this.shownTree = here.known ? { tape, position, unmarked: patch.length === 0 } : null;
      this.$.state.classList.remove("loading");
      delete document.body.dataset.loading;
      document.body.dataset.view = String(position);
      if (this.compact) this.prefetchRows(position);
      else if (cold) {
        tape.loadWindow(position, this.direction).catch(() => {
          // The step that needs it asks again and reports the error.
        });
      } else tape.prefetch(position, this.direction);
    } catch (error) {
      if (!stale()) this.fail(error);
    }
  }

  // ---- timeline ----------------------------------------------------------------------------

  private schedule(): void {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.sizeTimeline();
      this.renderTimeline();
      if (this.tape && this.tape.has(this.position - 1) && this.$.event.dataset.position !== String(this.position)) this.renderEvent();
    });
  }

  private renderTimeline(): void {
    const tape = this.tape;
    if (!tape) {
      this.$.rows.replaceChildren();
      return;
    }
    const scroller = this.$.scroller;
    const rowCount = this.rowCount();
    const firstRow = Math.max(0, Math.floor(scroller.scrollTop / ROW) - OVERSCAN);
    const lastRow = Math.min(rowCount - 1, Math.ceil((scroller.scrollTop + (scroller.clientHeight || 600)) / ROW) + OVERSCAN);
    const cursorRow = this.rowOf(this.position);
    // The same rows as last time: only the cursor moves (a step), nothing is rebuilt.
    const inherited = this.inherited;
    const inheritedRows = this.inheritedRows();
    const key = `${tape.session}:${firstRow}:${lastRow}:${tape.version}:${tape.scanned}:${this.matchesVersion}:${this.compact}:${this.expandedVersion}:${inheritedRows}:${inherited?.version ?? 0}`;
    if (key === this.rowsKey) {
      this.$.rows.querySelector(".row.cursor")?.classList.remove("cursor");
      this.$.rows.querySelector(`.row[data-row="${cursorRow}"]`)?.classList.add("cursor");
      return;
    }
    this.rowsKey = key;
    const first = this.positionAt(firstRow);
    const last = this.positionAt(lastRow);
    const matches = new Set<number>();
    if (this.matches.length > 0) {
      // Only the matches on screen: a binary search for the first.
      let lo = 0;
      let hi = this.matches.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (this.matches[mid]! < first - 1) lo = mid + 1;
        else hi = mid;
      }
      for (let i = lo; i < this.matches.length && this.matches[i]! < last; i++) matches.add(this.matches[i]!);
    }
    const rows: HTMLElement[] = [];
    const wanted: number[] = [];
    const inheritedWanted: number[] = [];
    for (let index = firstRow; index <= lastRow; index++) {
      if (inherited && index < inheritedRows) {
        rows.push(inheritedRow(inherited, index, index === inheritedRows - 1, inheritedWanted));
        continue;
      }
      const position = this.positionAt(index);
      const row = el("div", "row");
      row.style.top = `${index * ROW}px`;
      row.dataset.position = String(position);
      row.dataset.row = String(index);
      if (index === cursorRow) row.classList.add("cursor");
      if (position === 0) {
        row.classList.add("initial");
        row.append(el("span", "seq", "0"), el("span", "name", inherited ? `(fork point: the parent's state at ${inheritedRows})` : "(initial state)"));
        rows.push(row);
        continue;
      }
      const seq = position - 1;
      const event = tape.events[seq];
      row.append(el("span", "seq", String(position)));
      if (!event) {
        wanted.push(seq);
        row.classList.add("pending");
        row.append(el("span", "name", "…"));
        rows.push(row);
        continue;
      }
      if (matches.has(seq)) row.classList.add("match");
      const group = tape.groupAt(seq);
      if (group !== null && group >= 0) {
        const info = tape.groups.get(group);
        row.classList.add("grouped");
        row.dataset.g = String(group % 7);
        if (group === seq && info) {
          row.classList.add("group-start");
        }
        if (info && info.end === seq) row.classList.add("group-end");
      }
      row.append(el("span", "time", event.timestamp.slice(11, 23)), el("span", `name ${noun(event.name)}`, event.name));
      if (event.name === "agent:started" && group === seq) {
        const info = tape.groups.get(seq);
        if (info) {
          const span = info.end === null ? `${info.count} events, open` : `${info.count} events → ${info.end + 1}`;
          if (this.compact) {
            const open = this.expanded.has(seq);
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
      rows.push(row);
    }
    this.$.rows.replaceChildren(...rows);
    if (inherited && inheritedWanted.length > 0) {
      void inherited.ensure(Math.min(...inheritedWanted), Math.max(...inheritedWanted) + 1).catch((error: unknown) => this.fail(error));
    }
    if (wanted.length > 0) {
      // Contiguous in the full view; in the compact view only the pages of the rows shown.
      const reads = this.compact ? wanted.map((seq) => tape.ensure(seq, seq + 1)) : [tape.ensure(first - 1, last)];
      void Promise.all(reads).catch((error: unknown) => this.fail(error));
    }
  }

  // ---- rows: one per position, or, in the compact view, one per agent call ------------------

  private sizeTimeline(): void {
    this.$.spacer.style.height = `${this.rowCount() * ROW}px`;
  }

  /** The positions shown in the compact view, rebuilt when the groups or the toggles change. */
  private compactRows(): Int32Array {
    const tape = this.tape!;
    const key = `${tape.session}:${tape.len}:${tape.scanned}:${this.expandedVersion}`;
    if (this.compactIndex && this.compactKey === key) return this.compactIndex;
    const rows = new Int32Array(tape.len + 1);
    let count = 0;
    rows[count++] = 0;
    for (let seq = 0; seq < tape.len; seq++) {
      const group = tape.groupAt(seq);
      // A collapsed call shows its agent:started only; events not grouped yet all show.
      if (group !== null && group >= 0 && group !== seq && !this.expanded.has(group)) continue;
      rows[count++] = seq + 1;
    }
    this.compactIndex = rows.subarray(0, count);
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
    return this.inheritedRows() + (this.compact ? this.compactRows().length : tape.len + 1);
  }

  /** The position a row shows (0 for an inherited row: they come before the fork's own). */
  private positionAt(row: number): number {
    const own = row - this.inheritedRows();
    if (own < 0) return 0;
    return this.compact ? (this.compactRows()[own] ?? 0) : own;
  }

  /** The row showing `position`: in the compact view, a collapsed call's row for its events. */
  private rowOf(position: number): number {
    return this.inheritedRows() + this.ownRowOf(position);
  }

  /** The row showing `position` among the fork's own rows (all rows for a session no fork). */
  private ownRowOf(position: number): number {
    if (!this.compact) return position;
    const rows = this.compactRows();
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
   * The compact view steps from call to call, far apart: read ahead the states of the next rows
   * (and of the positions just before them, for their patches) in one request.
   */
  private prefetchRows(position: number): void {
    const tape = this.tape;
    if (!tape) return;
    const rows = this.compactRows();
    const row = this.ownRowOf(position);
    const near: number[] = [];
    for (let i = 1; i <= 16; i++) {
      const p = rows[row + i * this.direction];
      if (p !== undefined) near.push(p, p - 1);
    }
    if (near.every((p) => p < 0 || tape.stateAt(p).known)) return;
    const ahead: number[] = [];
    for (let i = 1; i <= 40; i++) {
      const p = rows[row + i * this.direction];
      if (p !== undefined) ahead.push(p, p - 1);
    }
    tape.loadPositions(ahead).catch(() => {
      // The step that needs them asks again and reports the error.
    });
  }

  private toggleCompact(): void {
    this.compact = !this.compact;
    this.$.compact.classList.toggle("on", this.compact);
    document.body.classList.toggle("compact", this.compact);
    this.rowsKey = "";
    this.sizeTimeline();
    this.scrollToCursor(true);
    this.renderTimeline();
  }

  private toggleGroup(start: number): void {
    if (this.expanded.has(start)) this.expanded.delete(start);
    else this.expanded.add(start);
    this.expandedVersion++;
    this.sizeTimeline();
    this.renderTimeline();
  }

  /** A step: an event in the full view, a row in the compact view. */
  private step(delta: number): void {
    if (!this.compact) {
      this.moveTo(this.position + delta);
      return;
    }
    const rows = this.compactRows();
    const row = clamp(this.ownRowOf(this.position) + delta, 0, rows.length - 1);
    void this.moveTo(rows[row] ?? 0);
  }

  // ---- the event at the cursor -------------------------------------------------------------

  private renderEvent(): void {
    const tape = this.tape;
    const box = this.$.event;
    box.dataset.position = String(this.position);
    if (!tape) {
      box.replaceChildren();
      return;
    }
    if (this.position === 0) {
      box.replaceChildren(el("div", "event-name", "(initial state)"), el("p", "hint", "Position 0: before the first event."));
      return;
    }
    const event = tape.events[this.position - 1];
    if (!event) {
      box.replaceChildren(el("div", "hint", "reading…"));
      delete box.dataset.position;
      return;
    }
    const head = el("div", "event-head");
    head.append(el("span", `event-name ${noun(event.name)}`, event.name), el("span", "event-seq", `seq ${event.seq} · position ${this.position}`));
    const facts = el("dl", "facts");
    facts.append(el("dt", "", "id"), el("dd", "mono", event.id), el("dt", "", "time"), el("dd", "mono", event.timestamp));
    facts.append(el("dt", "", "caused by"));
    const cause = el("dd", "mono");
    if (event.causedBy) {
      const button = el("button", "link", `${event.causedBy.slice(-12)} (c)`);
      button.dataset.cause = event.causedBy;
      button.title = `jump to ${event.causedBy}`;
      cause.append(button);
    } else cause.textContent = "—";
    facts.append(cause);
    const effects = tape.effects(event.id);
    if (effects.length > 0) {
      facts.append(el("dt", "", "caused"));
      const dd = el("dd", "effects");
      for (const seq of effects.slice(0, 30)) {
        const link = el("button", "link", `${seq + 1} ${tape.events[seq]?.name ?? ""}`);
        link.dataset.goto = String(seq + 1);
        dd.append(link);
      }
      if (effects.length > 30) dd.append(el("span", "hint", ` +${effects.length - 30}`));
      facts.append(dd);
    }
    const group = tape.groupAt(event.seq);
    if (group !== null && group >= 0) {
      const info = tape.groups.get(group);
      if (info) {
        facts.append(el("dt", "", "agent call"));
        const dd = el("dd", "");
        const link = el("button", "link", `${info.agent} from ${info.start + 1}`);
        link.dataset.goto = String(info.start + 1);
        dd.append(link);
        if (info.end !== null) {
          const end = el("button", "link", `to ${info.end + 1}`);
          end.dataset.goto = String(info.end + 1);
          dd.append(" ", end);
        }
        facts.append(dd);
      }
    }
    const payload = el("pre", "payload", JSON.stringify(event.payload, null, 2));
    box.replaceChildren(head, facts, payload);
  }

  private toggleCursorGroup(): void {
    const group = this.tape?.groupAt(this.position - 1);
    if (group !== null && group !== undefined && group >= 0) {
      if (!this.compact) this.toggleCompact();
      this.toggleGroup(group);
    }
  }

  private async jumpToCause(): Promise<void> {
    const tape = this.tape;
    const event = tape?.events[this.position - 1];
    if (!tape || !event?.causedBy) return;
    const seq = await tape.seqOf(event.causedBy, event.seq);
    if (this.tape !== tape) return;
    if (seq === null) {
      // A fork's event may be caused by one it inherited (the trigger of a call the fork point
      // cut, which the fork runs again): open the parent there.
      const inherited = this.inherited;
      const there = inherited ? await inherited.seqOf(event.causedBy, inherited.len) : null;
      if (this.tape !== tape) return;
      if (inherited && there !== null) {
        location.hash = `session=${encodeURIComponent(inherited.session)}&at=${there + 1}`;
        return;
      }
      this.note(`the causing event ${event.causedBy} is not in this session`);
      return;
    }
    this.moveTo(seq + 1);
  }

  private renderPatch(patch: PatchOp[]): void {
    const box = this.$.patch;
    box.dataset.position = String(this.position);
    if (patch.length === 0) {
      box.replaceChildren(el("div", "hint", this.position === 0 ? "Position 0 has no event." : "This event did not change the state."));
      return;
    }
    const list = el("ol", "ops");
    for (const op of patch.slice(0, 200)) {
      const item = el("li", `op ${op.op}`);
      item.append(el("span", "opname", op.op), el("span", "path", op.path || "(root)"));
      if ("value" in op) {
        const text = JSON.stringify(op.value);
        item.append(el("code", "value", text.length > 300 ? text.slice(0, 300) + "…" : text));
      }
      list.append(item);
    }
    box.replaceChildren(list);
    if (patch.length > 200) box.append(el("div", "hint", `+${patch.length - 200} more operations`));
  }

  // ---- search ------------------------------------------------------------------------------

  private search(query: string, jump = true): void {
    this.query = query;
    const tape = this.tape;
    this.matches = tape ? tape.search(query) : [];
    this.matchesVersion++;
    const partial = tape && tape.scanned < tape.len ? ` (of ${tape.scanned} read)` : "";
    this.$.matches.textContent = query.trim() ? `${this.matches.length} matches${partial}` : "";
    if (jump && this.matches.length > 0 && !this.matches.includes(this.position - 1)) this.nextMatch(1);
    this.renderTimeline();
  }

  private nextMatch(direction: number): void {
    if (this.matches.length === 0) return;
    const current = this.position - 1;
    const next =
      direction > 0
        ? (this.matches.find((seq) => seq > current) ?? this.matches[0]!)
        : ([...this.matches].reverse().find((seq) => seq < current) ?? this.matches[this.matches.length - 1]!);
    this.moveTo(next + 1);
  }

  // ---- live follow, fork, input ------------------------------------------------------------

  private toggleFollow(): void {
    this.following = !this.following;
    if (this.following) {
      if (!this.live) this.startLive();
      if (this.tape) this.moveTo(this.tape.len);
      this.following = true;
    } else {
      this.live?.stop();
      this.live = null;
    }
    this.renderMeta();
  }

  private startLive(): void {
    const tape = this.tape;
    if (!tape || this.live) return;
    let pending = false;
    this.live = follow(this.api, tape.session, tape.len - 1, {
      onEvent: (event: Recorded) => {
        if (this.tape !== tape) return;
        const atEnd = this.position === tape.len;
        tape.append(event);
        // A new session (a fork, a first turn) is listed once it has events; a turn's end
        // changes its status.
        const listed = this.sessions.some((s) => s.id === tape.session);
        if (event.name === "workflow:completed" || (!listed && !this.listing)) void this.refreshSessions();
        if (pending) return;
        pending = true;
        requestAnimationFrame(() => {
          pending = false;
          this.sizeTimeline();
          if (this.following || atEnd) {
            this.following = this.following || atEnd;
            this.moveTo(tape.len);
          } else this.renderTimeline();
          this.renderMeta();
        });
      },
      onStatus: (status, detail) => {
        document.body.dataset.live = status;
        this.$.status.textContent = `live: ${status}${detail ? ` (${detail})` : ""}`;
      },
    });
  }

  private async fork(): Promise<void> {
    const tape = this.tape;
    if (!tape) return;
    try {
      const { session } = await this.api.fork(tape.session, this.position);
      this.note(`forked at ${this.position}: ${session}`);
      await this.refreshSessions();
      location.hash = `session=${encodeURIComponent(session)}`;
    } catch (error) {
      this.fail(error);
    }
  }

  private async send(): Promise<void> {
    const tape = this.tape;
    const summary = this.summary;
    const text = this.$.input.value;
    if (!tape || !summary || text.trim() === "") return;
    try {
      if (summary.status === "waiting") {
        const request = await this.openRequest(tape);
        if (request) await this.api.answer(tape.session, request, text);
        else await this.api.input(tape.session, text);
      } else {
        await this.api.input(tape.session, text);
      }
      this.$.input.value = "";
      this.summary = { ...summary, status: "running" };
      this.following = true;
      this.startLive();
      this.renderMeta();
    } catch (error) {
      this.fail(error);
    }
  }

  /** The open `input:requested` of a waiting session: the last turn's `workflow:completed` names it. */
  private async openRequest(tape: Tape): Promise<string | null> {
    await tape.ensure(tape.len - 1, tape.len);
    for (let seq = tape.len - 1; seq >= Math.max(0, tape.len - PAGE_BACK); seq--) {
      const event = tape.events[seq];
      if (!event) await tape.ensure(seq, seq + 1);
      const payload = tape.events[seq]?.payload as { openRequests?: unknown } | undefined;
      if (tape.events[seq]?.name === "workflow:completed" && Array.isArray(payload?.openRequests)) {
        const open = payload.openRequests.filter((id): id is string => typeof id === "string");
        return open[open.length - 1] ?? null;
      }
    }
    return null;
  }

  // ---- keys --------------------------------------------------------------------------------

  private key(event: KeyboardEvent): void {
    const target = event.target as HTMLElement | null;
    const typing = target && (target.tagName === "INPUT" || target.tagName === "TEXTAREA");
    if (typing) {
      if (event.key === "Escape") target.blur();
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const page = Math.max(1, Math.floor(this.$.scroller.clientHeight / ROW) - 1);
    const actions: Record<string, () => void> = {
      j: () => this.step(1),
      ArrowDown: () => this.step(1),
      k: () => this.step(-1),
      ArrowUp: () => this.step(-1),
      PageDown: () => this.step(page),
      PageUp: () => this.step(-page),
      Home: () => this.moveTo(0),
      End: () => this.moveTo(this.tape?.len ?? 0),
      G: () => this.moveTo(this.tape?.len ?? 0),
      g: () => {
        this.$.goto.value = "";
        this.$.goto.focus();
      },
      "/": () => this.$.search.focus(),
      n: () => this.nextMatch(1),
      N: () => this.nextMatch(-1),
      c: () => void this.jumpToCause(),
      f: () => void this.fork(),
      l: () => this.toggleFollow(),
      x: () => this.toggleCompact(),
      o: () => this.toggleCursorGroup(),
      i: () => this.$.input.focus(),
      "?": () => this.$.help.showModal(),
    };
    const action = actions[event.key];
    if (action) {
      event.preventDefault();
      action();
    }
  }

  // ---- errors and keys ---------------------------------------------------------------------

  private askKey(): void {
    if (!this.$.keyDialog.open) {
      this.$.key.value = "";
      this.$.keyDialog.showModal();
    }
  }

  private fail(error: unknown): void {
    const text = error instanceof ApiError ? `${error.code}: ${error.message}` : error instanceof Error ? error.message : String(error);
    this.$.error.textContent = text;
    this.$.error.hidden = false;
    setTimeout(() => {
      if (this.$.error.textContent === text) this.$.error.hidden = true;
    }, 8000);
  }

  private note(text: string): void {
    this.$.status.textContent = text;
  }
}

const PAGE_BACK = 2000;

function byId(id: string): HTMLElement {
  const element = document.getElementById(id);
  if (!element) throw new Error(`the page has no #${id}`);
  return element;
}

function clamp(value: number, min: number, max: number): number {
  return Math.min(max, Math.max(min, value));
}

/**
 * The row of inherited event `seq` (a fork's parent's, before the fork point), dimmed; `last`
 * marks the one right before the fork's own rows. An event not read yet is added to `wanted`.
 */
function inheritedRow(inherited: Tape, seq: number, last: boolean, wanted: number[]): HTMLElement {
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
function noun(name: string): string {
  const head = name.split(":")[0] ?? "";
  return ["agent", "text", "tool", "user", "input", "workflow", "error", "session"].includes(head) ? `n-${head}` : "n-other";
}

function summarize(event: Recorded): string {
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

new Inspector().start();
