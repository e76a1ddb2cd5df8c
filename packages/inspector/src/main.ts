// The inspector page: the session list (searched, filtered and paged on the server), a
// virtualized timeline of one session's events grouped per agent call, the event at the cursor
// with its cause and effects, the patch it made, and the state as a tree. Keyboard: j/k or
// arrows step, g goes to a position, / searches, n/N next/previous match, c jumps to the cause,
// f forks at the cursor, l follows live.
//
// This file wires the panels (panels/*) to the view state (view.ts), the list's rules (list.ts)
// and the server (server.ts, over `@openharness/client`): it owns the list's pages and filter,
// the open session's tapes, reads the state and patch at the cursor, follows live and runs the
// keys' commands; what each panel shows is its module's.

import type { EventStream, JsonPatchOperation, Recorded, SessionDetail, SessionSummary } from "@openharness/client";
import { diff } from "./diff";
import { type Command, HELP, commandFor } from "./keys";
import { continueSession, exportJsonl, forkAt, openQuestion } from "./panels/controls";
import { renderEvent } from "./panels/event";
import { renderHeader } from "./panels/header";
import { renderPatch } from "./panels/patch";
import * as list from "./list";
import { renderSessions, renderWorkflows } from "./panels/sessions";
import { ROW, Timeline } from "./panels/timeline";
import { ExperimentsView } from "./panels/experiments";
import { DetailViews } from "./panels/views";
import { Server, describeError, unauthorized } from "./server";
import { Tape } from "./tape";
import { el, renderTree } from "./tree";
import * as view from "./view";

class Inspector {
  private readonly server = new Server(document.baseURI);
  private get client() {
    return this.server.client;
  }
  private view: view.View = view.initialView();
  /** The session list: the rows read so far for the filter, page by page. */
  private sessions: SessionSummary[] = [];
  private filter: list.ListFilter = list.initialFilter();
  private nextAfter: string | null = null;
  private total = 0;
  /** Bumped by every new filter: an answer for an older one is dropped. */
  private listGeneration = 0;
  private listLoading = false;
  private loadingMore = false;
  private workflows = new Set<string>();
  private searchTimer: ReturnType<typeof setTimeout> | undefined;
  private pollTimer: ReturnType<typeof setTimeout> | undefined;
  private lastRefresh = 0;
  private summary: SessionDetail | null = null;
  private tape: Tape | null = null;
  /** For a fork: its parent's events before the fork point, shown dimmed before its own. */
  private inherited: Tape | null = null;
  private live: EventStream | null = null;
  private frame = 0;
  /** The state the tree shows: its tape and position, and whether nothing in it is marked. */
  private shownTree: { tape: Tape; position: number; unmarked: boolean } | null = null;
  private addressTimer: ReturnType<typeof setTimeout> | undefined;
  /** A sessions request is under way. */
  private listing = false;
  private viewToken = 0;

  private readonly $ = {
    sessions: byId("sessions"),
    sessionSearch: byId("session-search") as HTMLInputElement,
    sessionStatus: byId("session-status") as HTMLSelectElement,
    sessionWorkflow: byId("session-workflow") as HTMLSelectElement,
    sessionSort: byId("session-sort") as HTMLSelectElement,
    sessionList: byId("session-list"),
    sessionCount: byId("session-count"),
    sessionMore: byId("session-more") as HTMLButtonElement,
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
    cancel: byId("cancel") as HTMLButtonElement,
    download: byId("download") as HTMLButtonElement,
    question: byId("question"),
    inputForm: byId("input-form") as HTMLFormElement,
    input: byId("input") as HTMLInputElement,
    inputHint: byId("input-hint"),
    keyDialog: byId("key-dialog") as HTMLDialogElement,
    keyForm: byId("key-form") as HTMLFormElement,
    key: byId("key") as HTMLInputElement,
    help: byId("help") as HTMLDialogElement,
    error: byId("error"),
    tabs: document.querySelector<HTMLElement>(".tabs")!,
    chat: byId("chat"),
    forks: byId("forks"),
    compare: byId("compare"),
    lineage: byId("lineage"),
    forkForm: byId("fork-form") as HTMLFormElement,
    forkAt: byId("fork-at") as HTMLInputElement,
    forkInput: byId("fork-input") as HTMLInputElement,
    forkState: byId("fork-state") as HTMLTextAreaElement,
    forkProvider: byId("fork-provider") as HTMLSelectElement,
    forkError: byId("fork-error"),
    experimentsButton: byId("experiments-button"),
    experimentsDialog: byId("experiments-dialog") as HTMLDialogElement,
    experimentList: byId("experiment-list"),
    experiment: byId("experiment"),
  };

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
    this.$.sessionSearch.addEventListener("input", () => {
      // Server-side, once the typing pauses.
      clearTimeout(this.searchTimer);
      this.searchTimer = setTimeout(() => this.setFilter({ search: this.$.sessionSearch.value }), 200);
    });
    this.$.sessionSearch.addEventListener("keydown", (event) => {
      if (event.key === "Enter") {
        clearTimeout(this.searchTimer);
        this.setFilter({ search: this.$.sessionSearch.value });
      }
    });
    this.$.sessionStatus.addEventListener("change", () => this.setFilter({ status: this.$.sessionStatus.value as list.ListFilter["status"] }));
    this.$.sessionWorkflow.addEventListener("change", () => this.setFilter({ workflow: this.$.sessionWorkflow.value }));
    this.$.sessionSort.addEventListener("change", () => this.setFilter({ sort: this.$.sessionSort.value as list.ListFilter["sort"] }));
    this.$.sessionMore.addEventListener("click", () => void this.loadMore());
    // Infinite scroll: the next page is read as "load more" comes into view.
    new IntersectionObserver((entries) => {
      if (entries.some((entry) => entry.isIntersecting)) void this.loadMore();
    }, { root: this.$.sessions, rootMargin: "200px" }).observe(this.$.sessionMore);
    // The list and the session in the address are read side by side: neither waits for the other.
    void this.reloadSessions();
    this.openFromHash();
    this.schedulePoll();
  }

  // ---- sessions ----------------------------------------------------------------------------

  /** A new filter: the list from its first page. */
  private setFilter(change: Partial<list.ListFilter>): void {
    const filter = { ...this.filter, ...change };
    if (JSON.stringify(filter) === JSON.stringify(this.filter)) return;
    this.filter = filter;
    void this.reloadSessions();
  }

  /** The first page for the filter, replacing the list. */
  private async reloadSessions(): Promise<void> {
    const generation = ++this.listGeneration;
    this.listLoading = true;
    document.body.dataset.list = "loading";
    try {
      const page = await this.client.querySessions(list.queryOf(this.filter));
      if (generation !== this.listGeneration) return;
      this.sessions = page.sessions;
      this.nextAfter = page.nextAfter;
      this.total = page.total;
      this.lastRefresh = Date.now();
      this.$.sessions.scrollTop = 0;
      this.listed();
    } catch (error) {
      if (generation === this.listGeneration) this.fail(error);
    } finally {
      if (generation === this.listGeneration) {
        this.listLoading = false;
        document.body.dataset.list = "ready";
        this.renderSessions();
        if (performance.getEntriesByName("sessions-listed").length === 0) performance.mark("sessions-listed");
      }
    }
  }

  /** The next page, appended. */
  private async loadMore(): Promise<void> {
    const after = this.nextAfter;
    if (!after || this.sessions.length >= this.total || this.loadingMore || this.listLoading) return;
    const generation = this.listGeneration;
    this.loadingMore = true;
    let read = false;
    try {
      const page = await this.client.querySessions(list.queryOf(this.filter, after));
      if (generation !== this.listGeneration || this.nextAfter !== after) return;
      this.sessions = list.appendPage(this.sessions, page.sessions);
      this.nextAfter = page.nextAfter;
      this.total = page.total;
      this.listed();
      read = page.sessions.length > 0;
    } catch (error) {
      if (generation === this.listGeneration) this.fail(error);
    } finally {
      this.loadingMore = false;
    }
    // "Load more" still in view (a tall screen): the observer says nothing new, so read on.
    if (!read) return;
    requestAnimationFrame(() => {
      const more = this.$.sessionMore.getBoundingClientRect();
      if (!this.$.sessionMore.hidden && more.top < this.$.sessions.getBoundingClientRect().bottom) void this.loadMore();
    });
  }

  /**
   * The rows on screen read again (as many as are listed, up to the server's page limit), so
   * statuses, lengths, tokens and costs do not lag; a session that is open but not listed (the
   * filter leaves it out) is read on its own while it runs.
   */
  private async refreshSessions(): Promise<void> {
    if (this.listing || this.listLoading) return;
    this.listing = true;
    const generation = this.listGeneration;
    try {
      const limit = Math.max(list.PAGE, Math.min(this.sessions.length, list.MAX_LIMIT));
      const page = await this.client.querySessions(list.queryOf(this.filter, null, limit));
      if (generation !== this.listGeneration) return;
      const covered = this.sessions.length <= limit;
      this.sessions = list.mergeRefresh(this.sessions, page.sessions, Math.min(this.sessions.length, limit));
      if (covered) this.nextAfter = page.nextAfter;
      this.total = page.total;
      this.lastRefresh = Date.now();
      this.listed();
      const open = this.summary;
      if (open && open.status === "running" && !this.sessions.some((s) => s.id === open.id)) {
        const detail = await this.client.getSession(open.id);
        if (this.summary?.id === open.id) this.summary = { ...this.summary, ...detail };
        this.renderMeta();
      }
    } catch (error) {
      this.fail(error);
    } finally {
      this.listing = false;
    }
  }

  /** Whether the server was asked if it serves experiments (once the list was read: with the key). */
  private experimentsProbed = false;

  /** After a list answer: the rows, the workflows seen, and the open session's summary. */
  private listed(): void {
    if (!this.experimentsProbed) {
      this.experimentsProbed = true;
      void this.experiments.probe();
    }
    for (const session of this.sessions) if (session.workflow) this.workflows.add(session.workflow);
    renderWorkflows(this.$.sessionWorkflow, this.workflows);
    this.renderSessions();
    const mine = this.summary && this.sessions.find((s) => s.id === this.summary!.id);
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
    const busy = list.anyRunning(this.sessions) || this.live !== null;
    this.pollTimer = setTimeout(() => {
      void this.refreshSessions().finally(() => this.schedulePoll());
    }, busy ? 2000 : 5000);
  }

  private renderSessions(): void {
    renderSessions(this.$, {
      sessions: this.sessions,
      total: this.total,
      more: this.nextAfter !== null && this.sessions.length < this.total,
      selected: this.summary?.id ?? this.view.session,
      loading: this.listLoading,
      search: this.filter.search,
    });
  }

  private openFromHash(): void {
    const wanted = view.parseAddress(location.hash);
    if (!wanted) return;
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
      if (compare) this.views.compareWith(compare);
      this.renderSessions();
      if (!this.sessions.some((s) => s.id === id)) void this.refreshSessions();
      this.renderMeta();
      this.timeline.size();
      this.timeline.scrollToCursor(true);
      if (summary.parent) void this.openInherited(tape, summary.parent);
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

  private close(): void {
    this.live?.close();
    this.live = null;
    this.inherited?.dispose();
    this.inherited = null;
    this.tape?.dispose();
    this.tape = null;
    this.summary = null;
    this.views.opened(null, 0);
    this.view = { ...this.view, session: null, matches: [] };
    this.timeline.reset();
    this.$.matches.textContent = "";
    // Nothing is shown until the next session's first screen: a test (or a script) waiting for
    // a position must not take the closed session's for the new one's.
    delete document.body.dataset.position;
    delete document.body.dataset.view;
  }

  private renderMeta(): void {
    renderHeader(this.$, this.summary, this.tape, this.view.following);
    this.$.cancel.hidden = this.summary?.status !== "running";
    this.$.download.disabled = !this.summary;
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
      if (this.tape === tape) history.replaceState(null, "", view.linkTo(location, view.addressOf(tape.session, this.view.position)));
    }, 150);
    this.timeline.scrollToCursor(false);
    this.timeline.render();
    this.renderEvent();
    this.views.moved(target);
    return this.loadView(target);
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
      let patch: JsonPatchOperation[] | undefined = tape.patchAt(position);
      if (!patch && here.known && before.known) {
        patch = position === 0 ? [] : diff(before.state, here.state);
        tape.rememberPatch(position, patch);
      }
      if (!patch) patch = await tape.loadPatch(position);
      if (stale()) return;
      renderPatch(this.$.patch, patch, this.view.position, before.known && position > 0 ? { state: before.state } : undefined);
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
      if (this.view.compact) this.prefetchRows(position);
      else if (cold) {
        tape.loadWindow(position, this.view.direction).catch(() => {
          // The step that needs it asks again and reports the error.
        });
      } else tape.prefetch(position, this.view.direction);
    } catch (error) {
      if (!stale()) this.fail(error);
    }
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

  /**
   * The compact view steps from call to call, far apart: read ahead the states of the next rows
   * (and of the positions just before them, for their patches) in one request.
   */
  private prefetchRows(position: number): void {
    const tape = this.tape;
    if (!tape) return;
    const rows = this.timeline.compactRows();
    const row = this.timeline.ownRowOf(position);
    const near: number[] = [];
    for (let i = 1; i <= 16; i++) {
      const p = rows[row + i * this.view.direction];
      if (p !== undefined) near.push(p, p - 1);
    }
    if (near.every((p) => p < 0 || tape.stateAt(p).known)) return;
    const ahead: number[] = [];
    for (let i = 1; i <= 40; i++) {
      const p = rows[row + i * this.view.direction];
      if (p !== undefined) ahead.push(p, p - 1);
    }
    tape.loadPositions(ahead).catch(() => {
      // The step that needs them asks again and reports the error.
    });
  }

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
        if (event.name === "workflow:completed" || Date.now() - this.lastRefresh > 1000) {
          this.lastRefresh = Date.now();
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

  /** The open session's events as JSONL, read here (a page at a time) and saved by the browser. */
  private async download(): Promise<void> {
    const summary = this.summary;
    if (!summary) return;
    try {
      this.note(`reading ${summary.id}…`);
      const events = await this.client.allEvents(summary.id);
      const url = URL.createObjectURL(new Blob([exportJsonl(summary.id, events)], { type: "application/x-ndjson" }));
      const link = document.createElement("a");
      link.href = url;
      link.download = `${summary.id}.jsonl`;
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
      this.note(`${events.length} events of ${summary.id} saved as ${link.download}`);
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

function byId(id: string): HTMLElement {
  const element = document.getElementById(id);
  if (!element) throw new Error(`the page has no #${id}`);
  return element;
}

new Inspector().start();
