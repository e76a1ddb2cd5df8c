// The feedback panel of the open session: a form to annotate it (a thumb up or down, labels, a
// note; about the turn at the cursor or the whole session) recorded with
// `POST /sessions/{id}/annotations` under the reviewer's name (asked once, kept in this
// browser's localStorage), and what was said of it (`GET /sessions/{id}/feedback`): people's
// annotations, newest first, with who and when, and the online scores of each turn. In the
// review queue its button saves and moves on ("Save & next"), and "Skip" moves on without.

import type { Feedback, OpenHarnessClient, SessionSummary } from "@openharness/client";
import * as feedback from "../feedback";
import { formatAgo, formatScore } from "../list";
import { describeError } from "../server";
import type { Tape } from "../tape";
import { el } from "../tree";

/** Where the reviewer's name is kept. */
const NAME_STORAGE = "openharness.inspector.reviewer";

export interface FeedbackElements {
  feedbackSummary: HTMLElement;
  feedbackList: HTMLElement;
  annotateForm: HTMLFormElement;
  thumbUp: HTMLButtonElement;
  thumbDown: HTMLButtonElement;
  annotateScope: HTMLSelectElement;
  annotateLabels: HTMLInputElement;
  annotateNote: HTMLTextAreaElement;
  annotateSave: HTMLButtonElement;
  annotateWho: HTMLButtonElement;
  annotateError: HTMLElement;
  queueSkip: HTMLButtonElement;
  whoDialog: HTMLDialogElement;
  who: HTMLInputElement;
}

/** What the panel asks of the page. */
export interface FeedbackHost {
  client(): OpenHarnessClient;
  /** The open session's events (for the turn at the cursor). */
  tape(): Tape | null;
  /** The cursor's position. */
  position(): number;
  /** An annotation of `session` was recorded (the list is read again; the queue moves on). */
  annotated(session: string): void;
  /** "Skip" in the review queue. */
  skip(): void;
  /** A turn's link was clicked: the cursor there. */
  moveTo(position: number): void;
  fail(error: unknown): void;
}

export class FeedbackPanel {
  private session: string | null = null;
  private thumbs: "up" | "down" | null = null;
  private shown: Feedback | null = null;
  /** The open session's scores and annotations as its summary last said them: read again when they change. */
  private said = "";
  /** Bumped by each read: an older answer is dropped. */
  private reads = 0;
  private saving = false;
  /** The turn at the cursor: its end position, null when none ended there, undefined unread. */
  private turn: number | null | undefined = undefined;

  constructor(
    private readonly $: FeedbackElements,
    private readonly host: FeedbackHost,
  ) {}

  bind(): void {
    const $ = this.$;
    for (const button of [$.thumbUp, $.thumbDown]) {
      button.addEventListener("click", () => {
        const thumb = button.dataset.thumb as "up" | "down";
        this.thumbs = this.thumbs === thumb ? null : thumb;
        this.showThumbs();
      });
    }
    $.annotateForm.addEventListener("submit", (event) => {
      event.preventDefault();
      void this.save();
    });
    $.queueSkip.addEventListener("click", () => this.host.skip());
    $.annotateWho.addEventListener("click", () => void this.askName());
    $.feedbackList.addEventListener("click", (event) => {
      const goto = (event.target as HTMLElement).closest<HTMLElement>("[data-goto]")?.dataset.goto;
      if (goto) this.host.moveTo(Number(goto));
    });
    this.showWho();
  }

  /** The review queue on or off: the button saves and moves on, "Skip" moves on. */
  setQueue(on: boolean): void {
    this.$.annotateSave.textContent = on ? "Save & next" : "Save";
    this.$.queueSkip.hidden = !on;
  }

  /** A session was opened (or closed: `null`): a fresh form, its feedback read. */
  opened(summary: Pick<SessionSummary, "id" | "scores" | "annotations"> | null): void {
    this.session = summary?.id ?? null;
    this.thumbs = null;
    this.turn = undefined;
    this.$.annotateScope.dataset.shown = "";
    this.shown = null;
    this.said = summary ? saidOf(summary) : "";
    this.$.annotateLabels.value = "";
    this.$.annotateNote.value = "";
    this.$.annotateError.hidden = true;
    this.$.annotateSave.disabled = !summary;
    this.showThumbs();
    this.render();
    if (summary) void this.read();
  }

  /** The open session's summary was read again: its feedback too when its scores or annotations changed. */
  summaryChanged(summary: Pick<SessionSummary, "id" | "scores" | "annotations"> | null): void {
    if (!summary || summary.id !== this.session) return;
    const said = saidOf(summary);
    if (said === this.said) return;
    this.said = said;
    void this.read();
  }

  /** The cursor moved, or more events were read: the scope says which turn "this turn" is. */
  moved(position: number): void {
    const tape = this.host.tape();
    const turn = tape ? feedback.turnAt((seq) => tape.events[seq], position, tape.len) : undefined;
    // Stepping within a turn changes nothing on screen.
    if (turn === this.turn && this.$.annotateScope.dataset.shown === "1") return;
    this.turn = turn;
    this.$.annotateScope.dataset.shown = "1";
    const option = this.$.annotateScope.querySelector<HTMLOptionElement>('option[value="turn"]')!;
    option.textContent =
      this.turn === undefined ? "this turn (reading…)" : this.turn === null ? "this turn (still running)" : `this turn (ends at ${this.turn})`;
    option.disabled = this.turn === null;
    if (this.turn === null && this.$.annotateScope.value === "turn") this.$.annotateScope.value = "session";
    this.$.annotateScope.dataset.turn = this.turn ? String(this.turn) : "";
  }

  /** Reads the open session's feedback and shows it. */
  async read(): Promise<void> {
    const session = this.session;
    if (!session) return;
    const read = ++this.reads;
    try {
      const answer = await this.host.client().feedback(session);
      if (read !== this.reads || session !== this.session) return;
      this.shown = answer;
      this.render();
    } catch (error) {
      if (read === this.reads) this.host.fail(error);
    }
  }

  /** The turn at the cursor, read on until its end is known (null: it has not ended). */
  private async turnAtCursor(): Promise<number | null> {
    const tape = this.host.tape();
    if (!tape) return null;
    for (;;) {
      const position = this.host.position();
      const turn = feedback.turnAt((seq) => tape.events[seq], position, tape.len);
      if (turn !== undefined) return turn;
      const missing = tape.events.findIndex((event, seq) => seq >= position - 1 && event === undefined);
      await tape.ensure(missing < 0 ? tape.events.length : missing, (missing < 0 ? tape.events.length : missing) + 500);
    }
  }

  private async save(): Promise<void> {
    const session = this.session;
    if (!session || this.saving) return;
    const $ = this.$;
    this.saving = true;
    $.annotateSave.disabled = true;
    try {
      const by = readName() ?? (await this.askName());
      if (!by || this.session !== session) return;
      let turn: number | null = null;
      if ($.annotateScope.value === "turn") {
        turn = await this.turnAtCursor();
        if (turn === null) return this.error("the turn at the cursor has not ended: annotate the whole session");
      }
      const annotation = feedback.annotationOf({ by, thumbs: this.thumbs, labels: $.annotateLabels.value, note: $.annotateNote.value, turn });
      if ("error" in annotation) return this.error(annotation.error);
      await this.host.client().annotate(session, annotation);
      if (this.session !== session) return;
      this.thumbs = null;
      this.showThumbs();
      $.annotateLabels.value = "";
      $.annotateNote.value = "";
      $.annotateError.hidden = true;
      await this.read();
      this.host.annotated(session);
    } catch (error) {
      this.error(describeError(error));
    } finally {
      this.saving = false;
      $.annotateSave.disabled = !this.session;
    }
  }

  private error(text: string): void {
    this.$.annotateError.textContent = text;
    this.$.annotateError.hidden = false;
  }

  /** Asks who annotates (the name kept for the next visit); null when none was given. */
  private askName(): Promise<string | null> {
    const $ = this.$;
    $.who.value = readName() ?? "";
    $.whoDialog.returnValue = "";
    $.whoDialog.showModal();
    return new Promise((resolve) => {
      $.whoDialog.addEventListener(
        "close",
        () => {
          const name = $.whoDialog.returnValue === "ok" ? $.who.value.trim() : "";
          if (name) writeName(name);
          this.showWho();
          resolve(name || readName());
        },
        { once: true },
      );
    });
  }

  private showWho(): void {
    const name = readName();
    this.$.annotateWho.textContent = name ?? "(say who you are)";
  }

  private showThumbs(): void {
    for (const button of [this.$.thumbUp, this.$.thumbDown]) {
      const on = button.dataset.thumb === this.thumbs;
      button.setAttribute("aria-pressed", String(on));
      button.classList.toggle("on", on);
    }
  }

  private render(): void {
    const $ = this.$;
    const shown = this.shown;
    $.feedbackList.dataset.session = this.session ?? "";
    if (!this.session) {
      $.feedbackSummary.textContent = "";
      $.feedbackList.replaceChildren();
      $.feedbackList.dataset.state = "none";
      return;
    }
    if (!shown) {
      $.feedbackSummary.textContent = "";
      $.feedbackList.replaceChildren(el("li", "hint", "Reading…"));
      $.feedbackList.dataset.state = "reading";
      return;
    }
    $.feedbackList.dataset.state = "shown";
    const turns = feedback.scoresByTurn(shown.scores);
    const count = shown.annotations.length;
    $.feedbackSummary.textContent =
      count === 0 && turns.length === 0
        ? "nothing yet"
        : `${count} annotation${count === 1 ? "" : "s"} · ${turns.length} turn${turns.length === 1 ? "" : "s"} scored`;
    const now = Date.now();
    const items: HTMLElement[] = [];
    for (const annotation of [...shown.annotations].reverse()) {
      const item = el("li", "annotation");
      item.dataset.id = annotation.id;
      item.dataset.by = annotation.by;
      const head = el("div", "annotation-head");
      const sign = feedback.thumbSign(annotation.thumbs);
      if (sign) head.append(el("span", `thumb ${annotation.thumbs}`, sign));
      const when = el("span", "hint", formatAgo(annotation.at, now));
      when.title = annotation.at;
      head.append(el("span", "by", annotation.by), when);
      const about = el("span", "subject hint", feedback.subjectOf(annotation));
      if (annotation.turn) {
        about.dataset.goto = String(annotation.turn);
        about.classList.add("goto");
        about.title = "the cursor there";
      }
      head.append(about);
      item.append(head);
      if (annotation.labels && annotation.labels.length > 0) {
        const labels = el("div", "labels");
        for (const label of annotation.labels) labels.append(el("span", "label", label));
        item.append(labels);
      }
      if (annotation.note) item.append(el("div", "note", annotation.note));
      items.push(item);
    }
    for (const { turn, scores } of [...turns].reverse()) {
      const item = el("li", "turn-scores");
      item.dataset.turn = String(turn);
      const link = el("span", "goto", `turn ending at ${turn}`);
      link.dataset.goto = String(turn);
      link.title = "the cursor there";
      item.append(link);
      for (const score of scores) {
        const chip = el("span", `score ${score.passed ? "pass" : "fail"}`, `${score.scorer} ${score.value === null ? "–" : formatScore(score.value)}`);
        chip.dataset.scorer = score.scorer;
        chip.title = `${score.passed ? "passed" : "did not pass"}${score.detail ? `: ${score.detail}` : ""} (${score.better} is better; ${score.at})`;
        item.append(chip);
      }
      items.push(item);
    }
    if (items.length === 0) items.push(el("li", "hint", "Nobody annotated this session yet, and no online scorer scored it."));
    $.feedbackList.replaceChildren(...items);
  }
}

/** What a summary says of a session's feedback, to see when it changed. */
function saidOf(summary: Pick<SessionSummary, "scores" | "annotations">): string {
  return JSON.stringify([summary.scores ?? null, summary.annotations ?? null]);
}

function readName(): string | null {
  try {
    const name = localStorage.getItem(NAME_STORAGE)?.trim();
    return name ? name : null;
  } catch {
    return null;
  }
}

function writeName(name: string): void {
  try {
    localStorage.setItem(NAME_STORAGE, name);
  } catch {
    // Storage may be unavailable (private mode): the name is asked again next time.
  }
}
