// The session list: the sessions the server answered for the filter (searched, filtered and
// sorted by `GET /sessions`, a page at a time), one row each with its title, workflow and
// agents, status, last event, duration, length, tokens and cost, its online scores and what
// people said of it (thumbs, labels); a fork links to its parent. The filter's controls
// (search, status, workflow, sort, scorer and score bounds, annotated, label) and "load more"
// are in the page; `SessionList` keeps the rows read so far for the filter (page by page,
// refreshed in place) and binds those controls, and the render functions fill the rows, the
// count and the workflow, scorer and label choices. In the review queue the list shows the
// sessions nobody annotated yet (its annotated select is held at "Not annotated").

import type { OpenHarnessClient, SessionSummary } from "@openharness/client";
import * as list from "../list";
import { queueFilter } from "../queue";
import { el } from "../tree";
import { addressOf, linkTo } from "../view";

export interface SessionsElements {
  sessionList: HTMLElement;
  sessionCount: HTMLElement;
  sessionMore: HTMLButtonElement;
  sessionWorkflow: HTMLSelectElement;
}

/** The page's elements the session list reads and fills. */
export interface SessionListElements extends SessionsElements {
  /** The list's scrolling container. */
  sessions: HTMLElement;
  sessionSearch: HTMLInputElement;
  sessionStatus: HTMLSelectElement;
  sessionSort: HTMLSelectElement;
  sessionScorer: HTMLInputElement;
  sessionScorers: HTMLElement;
  sessionMinScore: HTMLInputElement;
  sessionMaxScore: HTMLInputElement;
  sessionAnnotated: HTMLSelectElement;
  sessionLabel: HTMLInputElement;
  sessionLabels: HTMLElement;
}

/** What the session list asks of the page that holds it. */
export interface SessionListHost {
  client(): OpenHarnessClient;
  /** The session to mark as selected. */
  selected(): string | null;
  /** After every answer, once the rows are shown. */
  listed(sessions: readonly SessionSummary[]): void;
  /** The user changed the filter (the review queue keeps it in its address). */
  filtered?(filter: list.ListFilter): void;
  /** The address a row opens (default: the session's, `#session=<id>`). */
  addressOf?(session: string): string;
  fail(error: unknown): void;
}

/**
 * The session list: the rows read so far for the filter, page by page (infinite scroll), read
 * again in place by `refresh`; an answer for an older filter is dropped.
 */
export class SessionList {
  private rows: SessionSummary[] = [];
  private filter: list.ListFilter = list.initialFilter();
  private nextAfter: string | null = null;
  private count = 0;
  /** Bumped by every new filter: an answer for an older one is dropped. */
  private generation = 0;
  /** The first page for a new filter is under way. */
  private loading = false;
  private loadingMore = false;
  /** A refresh is under way. */
  private refreshing = false;
  private readonly workflows = new Set<string>();
  private readonly scorers = new Set<string>();
  private readonly labels = new Set<string>();
  private searchTimer: ReturnType<typeof setTimeout> | undefined;
  private typedTimer: ReturnType<typeof setTimeout> | undefined;
  /** The review queue: the filter's sessions that nobody annotated yet. */
  private queue = false;
  /** The first page for the current filter, read (or failed). */
  private loaded: Promise<void> = Promise.resolve();
  /** When the rows were last read (`Date.now()`); the page may set it to hold refreshes back. */
  lastRefresh = 0;

  constructor(
    private readonly $: SessionListElements,
    private readonly host: SessionListHost,
  ) {}

  /** The rows listed. */
  get sessions(): readonly SessionSummary[] {
    return this.rows;
  }

  /** Whether a listed session runs. */
  anyRunning(): boolean {
    return list.anyRunning(this.rows);
  }

  /** The filter the user set (the review queue lists it without annotated sessions). */
  get filterSet(): list.ListFilter {
    return this.filter;
  }

  /** How many sessions the filter lists in all (the rows are a page or a few of them). */
  get total(): number {
    return this.count;
  }

  /** Whether more rows than those listed match. */
  get hasMore(): boolean {
    return this.nextAfter !== null && this.rows.length < this.count;
  }

  /** Settles once the first page for the current filter was read (or failed). */
  ready(): Promise<void> {
    return this.loaded;
  }

  /** The filter as the server is asked it: the review queue's leaves annotated sessions out. */
  private effective(): list.ListFilter {
    return this.queue ? queueFilter(this.filter) : this.filter;
  }

  /** Listens to the filter's controls and "load more" (and scrolls it into reading). */
  bind(): void {
    const $ = this.$;
    $.sessionSearch.addEventListener("input", () => {
      // Server-side, once the typing pauses.
      clearTimeout(this.searchTimer);
      this.searchTimer = setTimeout(() => this.setFilter({ search: $.sessionSearch.value }), 200);
    });
    $.sessionSearch.addEventListener("keydown", (event) => {
      if (event.key === "Enter") {
        clearTimeout(this.searchTimer);
        this.setFilter({ search: $.sessionSearch.value });
      }
    });
    $.sessionStatus.addEventListener("change", () => this.setFilter({ status: $.sessionStatus.value as list.ListFilter["status"] }));
    $.sessionWorkflow.addEventListener("change", () => this.setFilter({ workflow: $.sessionWorkflow.value }));
    $.sessionSort.addEventListener("change", () => this.setFilter({ sort: $.sessionSort.value as list.ListFilter["sort"] }));
    $.sessionAnnotated.addEventListener("change", () => this.setFilter({ annotated: $.sessionAnnotated.value as list.ListFilter["annotated"] }));
    // The typed filters: asked once the typing pauses, or at once on Enter.
    const typed = (): Partial<list.ListFilter> => ({
      scorer: $.sessionScorer.value,
      minScore: $.sessionMinScore.value,
      maxScore: $.sessionMaxScore.value,
      label: $.sessionLabel.value,
    });
    for (const input of [$.sessionScorer, $.sessionMinScore, $.sessionMaxScore, $.sessionLabel]) {
      input.addEventListener("input", () => {
        clearTimeout(this.typedTimer);
        this.typedTimer = setTimeout(() => this.setFilter(typed()), 300);
      });
      input.addEventListener("keydown", (event) => {
        if (event.key === "Enter") {
          clearTimeout(this.typedTimer);
          this.setFilter(typed());
        }
      });
    }
    $.sessionMore.addEventListener("click", () => void this.loadMore());
    // Infinite scroll: the next page is read as "load more" comes into view.
    new IntersectionObserver((entries) => {
      if (entries.some((entry) => entry.isIntersecting)) void this.loadMore();
    }, { root: $.sessions, rootMargin: "200px" }).observe($.sessionMore);
  }

  /** The user changed the filter: the list from its first page. */
  private setFilter(change: Partial<list.ListFilter>): void {
    if (this.apply(change)) this.host.filtered?.(this.filter);
  }

  /**
   * A new filter (what `change` sets of it), its controls shown, and the review queue on or
   * off (`queue`: the list without the sessions already annotated): the list from its first
   * page. Whether it changed. A scorer cleared takes its score sort with it (the server sorts
   * by score only with a scorer).
   */
  apply(change: Partial<list.ListFilter>, queue = this.queue): boolean {
    const filter = { ...this.filter, ...change };
    if (filter.scorer.trim() === "" && list.SCORE_SORTS.includes(filter.sort)) filter.sort = "recent";
    const changed = !list.sameFilter(filter, this.filter) || queue !== this.queue;
    this.filter = filter;
    this.queue = queue;
    this.showFilter(filter);
    if (changed) void this.reload();
    return changed;
  }

  /** The controls set to `filter` (the queue holds the annotated select at "Not annotated"). */
  private showFilter(filter: list.ListFilter): void {
    const $ = this.$;
    const set = (input: HTMLInputElement | HTMLSelectElement, value: string): void => {
      if (input.value !== value && document.activeElement !== input) input.value = value;
    };
    set($.sessionSearch, filter.search);
    set($.sessionStatus, filter.status);
    if (filter.workflow !== "") this.workflows.add(filter.workflow);
    renderWorkflows($.sessionWorkflow, this.workflows);
    set($.sessionWorkflow, filter.workflow);
    set($.sessionScorer, filter.scorer);
    set($.sessionMinScore, filter.minScore);
    set($.sessionMaxScore, filter.maxScore);
    set($.sessionLabel, filter.label);
    const scored = filter.scorer.trim() !== "";
    $.sessionMinScore.disabled = !scored;
    $.sessionMaxScore.disabled = !scored;
    for (const option of $.sessionSort.options) if (list.SCORE_SORTS.includes(option.value as list.ListFilter["sort"])) option.disabled = !scored;
    $.sessionSort.value = filter.sort;
    $.sessionAnnotated.value = this.queue ? "no" : filter.annotated;
    $.sessionAnnotated.disabled = this.queue;
  }

  /** The first page for the filter, replacing the list. */
  reload(): Promise<void> {
    this.loaded = this.readFirst();
    return this.loaded;
  }

  private async readFirst(): Promise<void> {
    const generation = ++this.generation;
    this.loading = true;
    document.body.dataset.list = "loading";
    try {
      const page = await this.host.client().querySessions(list.queryOf(this.effective()));
      if (generation !== this.generation) return;
      this.rows = page.sessions;
      this.nextAfter = page.nextAfter;
      this.count = page.total;
      this.lastRefresh = Date.now();
      this.$.sessions.scrollTop = 0;
      this.listed();
    } catch (error) {
      if (generation === this.generation) this.host.fail(error);
    } finally {
      if (generation === this.generation) {
        this.loading = false;
        document.body.dataset.list = "ready";
        this.render();
        if (performance.getEntriesByName("sessions-listed").length === 0) performance.mark("sessions-listed");
      }
    }
  }

  /** The next page, appended (the one under way, when one is). */
  loadMore(): Promise<void> {
    if (!this.more) this.more = this.readMore().finally(() => (this.more = null));
    return this.more;
  }

  private more: Promise<void> | null = null;

  private async readMore(): Promise<void> {
    const after = this.nextAfter;
    if (!after || this.rows.length >= this.count || this.loadingMore || this.loading) return;
    const generation = this.generation;
    this.loadingMore = true;
    let read = false;
    try {
      const page = await this.host.client().querySessions(list.queryOf(this.effective(), after));
      if (generation !== this.generation || this.nextAfter !== after) return;
      this.rows = list.appendPage(this.rows, page.sessions);
      this.nextAfter = page.nextAfter;
      this.count = page.total;
      this.listed();
      read = page.sessions.length > 0;
    } catch (error) {
      if (generation === this.generation) this.host.fail(error);
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
   * statuses, lengths, tokens and costs do not lag. Whether they were read (not when another
   * read was under way, the filter changed meanwhile, or the read failed).
   */
  async refresh(): Promise<boolean> {
    if (this.refreshing || this.loading) return false;
    this.refreshing = true;
    const generation = this.generation;
    try {
      const limit = Math.max(list.PAGE, Math.min(this.rows.length, list.MAX_LIMIT));
      const page = await this.host.client().querySessions(list.queryOf(this.effective(), null, limit));
      if (generation !== this.generation) return false;
      const covered = this.rows.length <= limit;
      this.rows = list.mergeRefresh(this.rows, page.sessions, Math.min(this.rows.length, limit));
      if (covered) this.nextAfter = page.nextAfter;
      this.count = page.total;
      this.lastRefresh = Date.now();
      this.listed();
      return true;
    } catch (error) {
      this.host.fail(error);
      return false;
    } finally {
      this.refreshing = false;
    }
  }

  /** Shows the rows (the selection may have changed). */
  render(): void {
    renderSessions(this.$, {
      sessions: this.rows,
      total: this.count,
      more: this.nextAfter !== null && this.rows.length < this.total,
      selected: this.host.selected(),
      loading: this.loading,
      search: this.filter.search,
      filter: list.filterParams(this.effective()).toString(),
      addressOf: this.host.addressOf?.bind(this.host),
    });
  }

  /** After a list answer: the workflows, scorers and labels seen, the rows, and the host told. */
  private listed(): void {
    for (const session of this.rows) if (session.workflow) this.workflows.add(session.workflow);
    renderWorkflows(this.$.sessionWorkflow, this.workflows);
    list.seenFeedback(this.rows, this.scorers, this.labels);
    renderChoices(this.$.sessionScorers, this.scorers);
    renderChoices(this.$.sessionLabels, this.labels);
    this.render();
    this.host.listed(this.rows);
  }
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
  /** The whole filter the rows answer, as address parameters (`data-filter` of the list). */
  filter?: string;
  /** The address a row opens (default: the session's). */
  addressOf?: (session: string) => string;
}

export function renderSessions($: SessionsElements, shown: ListShown, now = Date.now()): void {
  const address = shown.addressOf ?? ((session: string) => addressOf(session));
  const items = shown.sessions.map((session) => row(session, session.id === shown.selected, now, address(session.id)));
  if (shown.sessions.length === 0) items.push(el("li", "empty", shown.loading ? "Loading…" : "No sessions match."));
  $.sessionList.replaceChildren(...items);
  $.sessionList.dataset.count = String(shown.sessions.length);
  $.sessionList.dataset.search = shown.search;
  $.sessionList.dataset.filter = shown.filter ?? "";
  $.sessionCount.textContent = `${shown.sessions.length} of ${shown.total} session${shown.total === 1 ? "" : "s"}`;
  $.sessionMore.hidden = !shown.more;
}

function row(session: SessionSummary, selected: boolean, now: number, address: string): HTMLElement {
  const item = el("li", "session" + (selected ? " selected" : "") + (session.parent ? " fork" : ""));
  item.dataset.session = session.id;
  const link = document.createElement("a");
  link.className = "open";
  link.href = linkTo(location, address);
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
  const said = feedbackLine(session);
  if (said) link.append(said);
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

/** A row's online scores (`helpful 0.82`) and what people said (`👍 2 👎 1`, labels); null for neither. */
function feedbackLine(session: SessionSummary): HTMLElement | null {
  const scores = list.scoresOf(session);
  const said = session.annotations;
  if (scores.length === 0 && !said) return null;
  const line = el("div", "feedback-line");
  if (scores.length > 0) {
    const box = el("span", "scores");
    for (const [scorer, value] of scores) {
      const score = el("span", "score", `${scorer} ${list.formatScore(value)}`);
      score.dataset.scorer = scorer;
      score.dataset.value = String(value);
      score.title = `${scorer}: latest online score ${value}`;
      box.append(score);
    }
    line.append(box);
  }
  if (said) {
    const box = el("span", "annotations");
    box.title = `${said.count} annotation${said.count === 1 ? "" : "s"}: ${said.up} up, ${said.down} down (each person's latest thumb)`;
    box.append(el("span", "thumbs", list.formatThumbs(said)));
    for (const label of said.labels ?? []) box.append(el("span", "label", label));
    line.append(box);
  }
  return line;
}

/** A datalist's choices: the names given, sorted. */
export function renderChoices(datalist: HTMLElement, names: ReadonlySet<string>): void {
  if (datalist.childElementCount === names.size) return;
  datalist.replaceChildren(
    ...[...names].sort().map((name) => {
      const option = document.createElement("option");
      option.value = name;
      return option;
    }),
  );
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
