// The inspector page: the session list (searched, filtered and paged on the server), a
// virtualized timeline of one session's events grouped per agent call, the event at the cursor
// with its cause and effects, the patch it made, and the state as a tree. Keyboard: j/k or
// arrows step, g goes to a position, / searches, n/N next/previous match, c jumps to the cause,
// f forks at the cursor, l follows live.
//
// This file wires the panels (panels/*) to the view state (view.ts) and the server (server.ts,
// over `@openharness/client`): it owns the open session's tapes and the cursor, follows live,
// walks the review queue (`#queue…`: the sessions nobody annotated yet, one after another) and
// runs the keys' commands; the session list (panels/sessions.ts), the state and patch at the
// cursor (panels/state.ts), the feedback panel (panels/feedback.ts) and what each panel shows
// are their modules'.

import type { EventStream, Recorded, SessionDetail, SessionSummary, StateCheck } from "@openharness/client";
import { type Command, HELP, commandFor } from "./keys";
import { continueSession, forkAt, openQuestion } from "./panels/controls";
import { renderEvent } from "./panels/event";
import { renderHeader } from "./panels/header";
import { SessionList } from "./panels/sessions";
import { StateAtCursor } from "./panels/state";
import { ROW, Timeline } from "./panels/timeline";
import { ExperimentsView } from "./panels/experiments";
import { FeedbackPanel } from "./panels/feedback";
import { type ListFilter, initialFilter } from "./list";
import { nextInQueue, parseQueue, queueAddress, remaining } from "./queue";
import { DetailViews } from "./panels/views";
import { Server, describeError, unauthorized } from "./server";
import { Tape } from "./tape";
import { el } from "./tree";
import { byId, pageElements } from "./elements";
import * as view from "./view";

class Inspector {
  private readonly server = new Server(document.baseURI);
  private get client() {
    return this.server.client;
  }
  private view: view.View = view.initialView();
  private pollTimer: ReturnType<typeof setTimeout> | undefined;
  private summary: SessionDetail | null = null;
  /** Where today's handlers fold the open session to another state than its live run had. */
  private stateCheck: StateCheck | null = null;
  private tape: Tape | null = null;
  /** For a fork: its parent's events before the fork point, shown dimmed before its own. */
  private inherited: Tape | null = null;
  private live: EventStream | null = null;
  private frame = 0;
  private addressTimer: ReturnType<typeof setTimeout> | undefined;

  private readonly $ = pageElements();

  /** The review queue, while it is walked: the sessions annotated and skipped in it so far. */
  private review: { done: Set<string>; skipped: Set<string> } | null = null;

  private readonly sessionList = new SessionList(this.$, {
    client: () => this.client,
    selected: () => this.summary?.id ?? this.view.session,
    listed: (sessions) => this.listed(sessions),
    filtered: (filter) => this.filtered(filter),
    addressOf: (session) => this.addressFor(session),
    fail: (error) => this.fail(error),
  });

  private readonly feedback = new FeedbackPanel(this.$, {
    client: () => this.client,
    tape: () => this.tape,
    position: () => this.view.position,
    annotated: (session) => this.annotated(session),
    skip: () => this.skip(),
    moveTo: (position) => void this.moveTo(position),
    fail: (error) => this.fail(error),
  });

  private readonly stateAt = new StateAtCursor(this.$, {
    tape: () => this.tape,
    view: () => this.view,
    rows: () => this.timeline,
    fail: (error) => this.fail(error),
  });

  private readonly timeline = new Timeline(
    this.$,
    () => ({ tape: this.tape, inherited: this.inherited, view: this.view, running: this.summary?.status === "running" }),
    (error) => this.fail(error),
  );

  private readonly views = new DetailViews(this.$, {
    client: () => this.client,
    openSession: (session, at) => {
      location.hash = view.addressOf(session, at);
    },
    fail: (error) => this.fail(error),
    note: (text) => this.note(text),
  });

  private readonly experiments = new ExperimentsView(
    { dialog: this.$.experimentsDialog, list: this.$.experimentList, experiment: this.$.experiment, button: this.$.experimentsButton },
    () => this.client,
    (a, b) => {
      location.hash = `${view.addressOf(a)}&compare=${encodeURIComponent(b)}`;
    },
    (error) => this.fail(error),
  );

  start(): void {
    // The compact view is the default; the full view, once chosen, is kept for the next visit.
    this.view = { ...this.view, compact: readPreference(VIEW_STORAGE) !== "full" };
    this.showCompact();
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
    this.$.cancel.addEventListener("click", () => void this.cancel());
    this.$.download.addEventListener("click", () => void this.download());
    this.$.inputForm.addEventListener("submit", (event) => {
      event.preventDefault();
      void this.send();
    });
    this.$.keyForm.addEventListener("submit", () => {
      this.server.setKey(this.$.key.value);
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
        location.hash = view.addressOf(this.inherited.session, Number(row.dataset.parentPosition));
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
    this.$.experimentsButton.addEventListener("click", () => void this.experiments.open());
    const helpList = byId("help-list");
    for (const [keys, what] of HELP) helpList.append(el("dt", "", keys), el("dd", "", what));
    window.addEventListener("hashchange", () => this.openFromHash());
    this.$.queueStart.addEventListener("click", () => {
      location.hash = queueAddress(this.sessionList.filterSet);
    });
    this.$.queueExit.addEventListener("click", () => {
      location.hash = this.summary ? view.addressOf(this.summary.id, this.view.position) : "";
    });
    this.sessionList.bind();
    this.feedback.bind();
    // The list and the session in the address are read side by side: neither waits for the other.
    void this.sessionList.reload();
    this.openFromHash();
    this.schedulePoll();
  }

  // ---- sessions ----------------------------------------------------------------------------

  /**
   * The listed rows read again; a session that is open but not listed (the filter leaves it
   * out) is read on its own while it runs.
   */
  private async refreshSessions(): Promise<void> {
    if (!(await this.sessionList.refresh())) return;
    const open = this.summary;
    if (!open || open.status !== "running" || this.sessionList.sessions.some((s) => s.id === open.id)) return;
    try {
      const detail = await this.client.getSession(open.id);
      if (this.summary?.id === open.id) this.summary = { ...this.summary, ...detail };
      this.renderMeta();
    } catch (error) {
      this.fail(error);
    }
  }

  /** Whether the server was asked if it serves experiments (once the list was read: with the key). */
  private experimentsProbed = false;

  /** After a list answer: the open session's summary kept up to date, the queue's count. */
  private listed(sessions: readonly SessionSummary[]): void {
    if (!this.experimentsProbed) {
      this.experimentsProbed = true;
      void this.experiments.probe();
    }
    this.showQueue();
    const mine = this.summary && sessions.find((s) => s.id === this.summary!.id);
    if (mine && this.summary) {
      const wasRunning = this.summary.status === "running";
      this.summary = { ...this.summary, ...mine };
      this.renderMeta();
      if (mine.status === "running" && !wasRunning && !this.live) this.startLive();
    }
  }

  /** The list is read again every 2 s while a listed session runs or one is followed, else every 5 s. */
  private schedulePoll(): void {
    clearTimeout(this.pollTimer);
    const busy = this.sessionList.anyRunning() || this.live !== null;
    this.pollTimer = setTimeout(() => {
      void this.refreshSessions().finally(() => this.schedulePoll());
    }, busy ? 2000 : 5000);
  }

  private openFromHash(): void {
    const queue = parseQueue(location.hash);
    if (queue) this.enterQueue(queue.filter);
    else if (this.review) this.leaveQueue();
    const wanted = view.parseAddress(location.hash);
    if (!wanted) {
      if (this.review) void this.queueNext();
      return;
    }
    if (this.summary?.id === wanted.session) {
      if (wanted.at !== null && wanted.at !== this.view.position) this.moveTo(wanted.at);
      if (wanted.compare) this.views.compareWith(wanted.compare);
      return;
    }
    void this.open(wanted.session, wanted.at, wanted.compare ?? null);
  }

  /** Opens a session at `position` (its end when null), compared with `compare` when given. */
  private async open(id: string, position: number | null, compare: string | null = null): Promise<void> {
    this.close();
    try {
      const summary = await this.client.getSession(id);
      this.summary = summary;
      const tape = new Tape(this.client, id, summary.len);
      this.tape = tape;
      tape.onChange = () => this.schedule();
      this.view = {
        ...view.initialView(),
        session: id,
        compact: this.view.compact,
        query: this.view.query,
        position: view.clamp(position ?? summary.len, 0, summary.len),
        following: position === null && summary.status === "running",
      };
      this.views.opened(summary, this.view.position);
      this.feedback.opened(summary);
      if (compare) this.views.compareWith(compare);
      this.sessionList.render();
      if (!this.sessionList.sessions.some((s) => s.id === id)) void this.refreshSessions();
      this.renderMeta();
      this.timeline.size();
      this.timeline.scrollToCursor(true);
      if (summary.parent) void this.openInherited(tape, summary.parent);
      void this.checkState(id, tape);
      if (tape.len > 0) await tape.ensure(this.view.position - 60, this.view.position + 60);
      if (this.tape !== tape) return;
      this.renderMeta();
      const first = this.moveTo(this.view.position);
      if (summary.status === "running" || this.view.following) this.startLive();
      // The first screen's state before anything else is read.
      await first;
      if (this.tape !== tape) return;
      // For the scale tests: when the opened session's first screen was complete.
      performance.mark("session-shown", { detail: id });
      // Everything else in the background: groups, search and causes then cover the session.
      const scanned = (): void => {
        this.renderMeta();
        if (this.view.query) this.search(this.view.query, false);
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
      const inherited = new Tape(this.client, parent, forkIndex, forkIndex);
      inherited.onChange = () => this.schedule();
      this.inherited = inherited;
      // The fork's rows move down by the inherited ones: keep them where they were on screen.
      this.timeline.size();
      this.$.scroller.scrollTop += forkIndex * ROW;
      this.timeline.invalidate();
      this.timeline.render();
    } catch (error) {
      this.fail(error);
    }
  }

  /** Asks once whether the open session's recorded states are what today's handlers fold. */
  private async checkState(id: string, tape: Tape): Promise<void> {
    try {
      const check = await this.client.checkState(id);
      if (this.tape !== tape) return;
      this.stateCheck = check;
      this.renderMeta();
    } catch {
      // A workflow not registered here has no handlers to check with: nothing to say.
    }
  }

  private close(): void {
    this.stateCheck = null;
    this.live?.close();
    this.live = null;
    this.inherited?.dispose();
    this.inherited = null;
    this.tape?.dispose();
    this.tape = null;
    this.summary = null;
    this.views.opened(null, 0);
    this.feedback.opened(null);
    this.view = { ...this.view, session: null, matches: [] };
    this.timeline.reset();
    this.$.matches.textContent = "";
    // Nothing is shown until the next session's first screen: a test (or a script) waiting for
    // a position must not take the closed session's for the new one's.
    delete document.body.dataset.position;
    delete document.body.dataset.view;
  }

  private renderMeta(): void {
    renderHeader(this.$, this.summary, this.tape, this.view.following, this.stateCheck);
    this.$.cancel.hidden = this.summary?.status !== "running";
    this.$.download.disabled = !this.summary;
    this.feedback.summaryChanged(this.summary);
    if (this.tape) this.feedback.moved(this.view.position);
    this.showQuestion();
  }

  /** The question a waiting session asks, beside the box that answers it. */
  private questionFor = "";
  private showQuestion(): void {
    const tape = this.tape;
    const key = tape && this.summary?.status === "waiting" ? `${tape.session}:${tape.len}` : "";
    if (key === this.questionFor) return;
    this.questionFor = key;
    this.$.question.hidden = true;
    this.$.question.textContent = "";
    if (!tape || !key) return;
    openQuestion(tape).then(
      (prompt) => {
        if (this.questionFor !== key || !prompt) return;
        this.$.question.textContent = prompt;
        this.$.question.title = prompt;
        this.$.question.hidden = false;
      },
      (error: unknown) => this.fail(error),
    );
  }

  // ---- the review queue ----------------------------------------------------------------------

  /** The address of a session (at a position): in the review queue, the queue's with it. */
  private addressFor(session: string, at?: number): string {
    return this.review ? queueAddress(this.sessionList.filterSet, session, at) : view.addressOf(session, at);
  }

  /** The review queue, walked with the list's filter as the address sets it. */
  private enterQueue(filter: Partial<ListFilter>): void {
    const entering = !this.review;
    if (entering) this.review = { done: new Set(), skipped: new Set() };
    this.sessionList.apply({ ...initialFilter(), ...filter }, true);
    if (!entering) return;
    document.body.classList.add("queue");
    this.feedback.setQueue(true);
    this.views.show("chat");
    this.showQueue();
  }

  private leaveQueue(): void {
    this.review = null;
    document.body.classList.remove("queue");
    this.feedback.setQueue(false);
    this.sessionList.apply({}, false);
    this.showQueue();
  }

  /** The queue bar: how many are left (the list's total: nobody annotated them yet). */
  private showQueue(): void {
    const review = this.review;
    this.$.queueBar.hidden = !review;
    this.$.queueStart.hidden = !!review;
    if (!review) return;
    this.$.queueCount.textContent = remaining(this.sessionList.total, review.skipped.size);
    this.$.queueCount.dataset.total = String(this.sessionList.total);
  }

  /** Opens the next session to review: the first listed that was not annotated or skipped here. */
  private async queueNext(): Promise<void> {
    const review = this.review;
    if (!review) return;
    await this.sessionList.ready();
    const passed = new Set([...review.done, ...review.skipped]);
    for (;;) {
      if (this.review !== review) return;
      const next = nextInQueue(this.sessionList.sessions, passed);
      if (next) {
        location.hash = queueAddress(this.sessionList.filterSet, next.id);
        return;
      }
      if (!this.sessionList.hasMore) break;
      const before = this.sessionList.sessions.length;
      await this.sessionList.loadMore();
      if (this.sessionList.sessions.length === before) break;
    }
    // Nothing left: the queue says so, and no session stays open in it.
    this.close();
    this.renderMeta();
    this.sessionList.render();
    history.replaceState(null, "", view.linkTo(location, queueAddress(this.sessionList.filterSet)));
    this.showQueue();
  }

  /** An annotation was recorded: the list says so; the queue moves on to the next session. */
  private annotated(session: string): void {
    const review = this.review;
    if (!review) {
      void this.refreshSessions();
      return;
    }
    review.done.add(session);
    if (this.summary?.id !== session) return;
    void this.sessionList.reload().then(() => this.queueNext());
  }

  /** "Skip": the next session to review, this one left for later. */
  private skip(): void {
    const review = this.review;
    if (!review || !this.summary) return;
    review.skipped.add(this.summary.id);
    this.showQueue();
    void this.queueNext();
  }

  /** The list's filter changed: the queue's address keeps it; an empty queue looks again. */
  private filtered(filter: ListFilter): void {
    if (!this.review) return;
    history.replaceState(null, "", view.linkTo(location, queueAddress(filter, this.summary?.id, this.summary ? this.view.position : undefined)));
    if (!this.summary) void this.queueNext();
  }

  // ---- cursor ------------------------------------------------------------------------------

  /** Moves the cursor; the promise settles when the state and patch there are shown. */
  private moveTo(position: number): Promise<void> {
    const tape = this.tape;
    if (!tape) return Promise.resolve();
    this.view = view.moveTo(this.view, position, tape.len);
    const target = this.view.position;
    document.body.dataset.position = String(target);
    // The address follows the cursor, written once the keys pause (not on every step).
    clearTimeout(this.addressTimer);
    this.addressTimer = setTimeout(() => {
      if (this.tape === tape) history.replaceState(null, "", view.linkTo(location, this.addressFor(tape.session, this.view.position)));
    }, 150);
    this.timeline.scrollToCursor(false);
    this.timeline.render();
    this.renderEvent();
    this.views.moved(target);
    this.feedback.moved(target);
    return this.stateAt.show(target);
  }

  // ---- timeline ----------------------------------------------------------------------------

  private schedule(): void {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.timeline.size();
      this.timeline.render();
      if (this.tape && this.tape.has(this.view.position - 1) && this.$.event.dataset.position !== String(this.view.position)) this.renderEvent();
    });
  }

  // ---- rows: one per position, or, in the compact view, one per agent call ------------------

  private toggleCompact(): void {
    this.view = { ...this.view, compact: !this.view.compact };
    writePreference(VIEW_STORAGE, this.view.compact ? "compact" : "full");
    this.showCompact();
    this.timeline.invalidate();
    this.timeline.size();
    this.timeline.scrollToCursor(true);
    this.timeline.render();
  }

  private showCompact(): void {
    this.$.compact.classList.toggle("on", this.view.compact);
    document.body.classList.toggle("compact", this.view.compact);
  }

  private toggleGroup(start: number): void {
    this.timeline.toggleGroup(start);
  }

  /** A step: an event in the full view, a row in the compact view. */
  private step(delta: number): void {
    if (!this.view.compact) {
      this.moveTo(this.view.position + delta);
      return;
    }
    const rows = this.timeline.compactRows();
    const row = view.clamp(this.timeline.ownRowOf(this.view.position) + delta, 0, rows.length - 1);
    void this.moveTo(rows[row] ?? 0);
  }

  // ---- the event at the cursor -------------------------------------------------------------

  private renderEvent(): void {
    renderEvent(this.$.event, this.tape, this.view.position);
  }

  private toggleCursorGroup(): void {
    const group = this.tape?.groupAt(this.view.position - 1);
    if (group !== null && group !== undefined && group >= 0) {
      if (!this.view.compact) this.toggleCompact();
      this.toggleGroup(group);
    }
  }

  private async jumpToCause(): Promise<void> {
    const tape = this.tape;
    const event = tape?.events[this.view.position - 1];
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
        location.hash = view.addressOf(inherited.session, there + 1);
        return;
      }
      this.note(`the causing event ${event.causedBy} is not in this session`);
      return;
    }
    this.moveTo(seq + 1);
  }

  // ---- search ------------------------------------------------------------------------------

  private search(query: string, jump = true): void {
    const tape = this.tape;
    this.view = { ...this.view, query, matches: tape ? tape.search(query) : [] };
    this.timeline.matchesChanged();
    const partial = tape && tape.scanned < tape.len ? ` (of ${tape.scanned} read)` : "";
    this.$.matches.textContent = query.trim() ? `${this.view.matches.length} matches${partial}` : "";
    if (jump && this.view.matches.length > 0 && !this.view.matches.includes(this.view.position - 1)) this.nextMatch(1);
    this.timeline.render();
  }

  private nextMatch(direction: number): void {
    const next = view.nextMatch(this.view.matches, this.view.position, direction);
    if (next !== null) this.moveTo(next);
  }

  // ---- live follow, fork, input ------------------------------------------------------------

  private toggleFollow(): void {
    const following = !this.view.following;
    this.view = { ...this.view, following };
    if (following) {
      if (!this.live) this.startLive();
      if (this.tape) this.moveTo(this.tape.len);
      this.view = { ...this.view, following: true };
    } else {
      this.live?.close();
      this.live = null;
    }
    this.renderMeta();
  }

  private startLive(): void {
    const tape = this.tape;
    if (!tape || this.live) return;
    let pending = false;
    const shown = (status: view.LiveStatus, detail?: string): void => {
      // A stream closed for a newer one says nothing over it.
      if (this.live !== stream && this.live !== null) return;
      document.body.dataset.live = status;
      this.$.status.textContent = `live: ${status}${detail ? ` (${detail})` : ""}`;
    };
    // Resumed with Last-Event-ID after any drop, retried for as long as the page follows; a
    // refusal retrying cannot fix (401, 404) stops it.
    const stream: EventStream = this.client.streamEvents(tape.session, {
      after: tape.len > 0 ? tape.len - 1 : null,
      retry: { maxAttempts: Number.POSITIVE_INFINITY, maxDelayMs: 8000 },
      onStatus: (status) => shown(view.liveStatus(status.state), status.state === "reconnecting" ? status.error?.message : undefined),
    });
    this.live = stream;
    const onEvent = (event: Recorded): void => {
        if (this.tape !== tape) return;
        const atEnd = this.view.position === tape.len;
        tape.append(event);
        // A new session (a fork, a first turn) is listed once it has events; a turn's end
        // changes its status.
        // The followed session's row keeps up: its length, tokens and cost (at most once a
        // second), its status at a turn's end.
        if (event.name === "workflow:completed" || Date.now() - this.sessionList.lastRefresh > 1000) {
          this.sessionList.lastRefresh = Date.now();
          void this.refreshSessions();
        }
        if (pending) return;
        pending = true;
        requestAnimationFrame(() => {
          pending = false;
          this.timeline.size();
          if (this.view.following || atEnd) {
            this.view = { ...this.view, following: true };
            this.moveTo(tape.len);
          } else this.timeline.render();
          this.renderMeta();
        });
    };
    stream.forEach(onEvent).catch((error: unknown) => {
      shown("stopped", describeError(error));
      if (this.live === stream) this.live = null;
      if (unauthorized(error)) this.askKey();
    });
  }

  private async fork(): Promise<void> {
    const tape = this.tape;
    if (!tape) return;
    try {
      const { session } = await forkAt(this.client, tape, this.view.position);
      this.note(`forked at ${this.view.position}: ${session}`);
      await this.refreshSessions();
      location.hash = view.addressOf(session);
    } catch (error) {
      this.fail(error);
    }
  }

  private async cancel(): Promise<void> {
    const summary = this.summary;
    if (!summary) return;
    try {
      const { cancelled } = await this.client.cancel(summary.id);
      this.note(cancelled ? `cancelled the turn of ${summary.id}` : `no turn of ${summary.id} runs on this server`);
      void this.refreshSessions();
    } catch (error) {
      this.fail(error);
    }
  }

  /**
   * The open session's export, as the server writes it (`GET /sessions/{id}/export`, the same
   * hash-chained JSONL as `openharness export`, a fork's ancestors first), saved by the browser
   * byte for byte, so `openharness verify` checks the file and `openharness import` reads it.
   */
  private async download(): Promise<void> {
    const summary = this.summary;
    if (!summary) return;
    try {
      this.note(`exporting ${summary.id}…`);
      const jsonl = await this.client.exportJsonl(summary.id);
      const url = URL.createObjectURL(new Blob([jsonl], { type: "application/x-ndjson" }));
      const link = document.createElement("a");
      link.href = url;
      link.download = `${summary.id}.jsonl`;
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
      this.note(`${summary.id} saved as ${link.download}, hash-chained: \`openharness verify ${link.download}\` checks it`);
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
      await continueSession(this.client, summary, tape, text);
      this.$.input.value = "";
      this.summary = { ...summary, status: "running" };
      this.view = { ...this.view, following: true };
      this.startLive();
      this.renderMeta();
    } catch (error) {
      this.fail(error);
    }
  }

  // ---- keys --------------------------------------------------------------------------------

  private key(event: KeyboardEvent): void {
    const target = event.target as HTMLElement | null;
    const typing = target && (target.tagName === "INPUT" || target.tagName === "TEXTAREA" || target.tagName === "SELECT");
    if (typing) {
      if (event.key === "Escape") target.blur();
      return;
    }
    const command = commandFor(event, false);
    if (command === null) return;
    event.preventDefault();
    this.run(command);
  }

  private run(command: Command): void {
    if (typeof command === "object") {
      if ("step" in command) this.step(command.step);
      else this.step(command.screen * Math.max(1, Math.floor(this.$.scroller.clientHeight / ROW) - 1));
      return;
    }
    switch (command) {
      case "start":
        return void this.moveTo(0);
      case "end":
        return void this.moveTo(this.tape?.len ?? 0);
      case "goto":
        this.$.goto.value = "";
        return this.$.goto.focus();
      case "search":
        return this.$.search.focus();
      case "next-match":
        return this.nextMatch(1);
      case "previous-match":
        return this.nextMatch(-1);
      case "cause":
        return void this.jumpToCause();
      case "fork":
        return void this.fork();
      case "follow":
        return this.toggleFollow();
      case "compact":
        return this.toggleCompact();
      case "group":
        return this.toggleCursorGroup();
      case "input":
        return this.$.input.focus();
      case "help":
        return this.$.help.showModal();
      case "tab":
        return this.views.cycle();
      case "experiments":
        return void this.experiments.open();
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
    if (unauthorized(error)) this.askKey();
    const text = describeError(error);
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

/** Where the chosen view (`compact` or `full`) is kept. */
const VIEW_STORAGE = "openharness.inspector.view";

function readPreference(key: string): string | null {
  try {
    return localStorage.getItem(key);
  } catch {
    return null;
  }
}

function writePreference(key: string, value: string): void {
  try {
    localStorage.setItem(key, value);
  } catch {
    // Storage may be unavailable (private mode): the choice lasts as long as the page.
  }
}

new Inspector().start();
