// The state and the patch at the cursor: read from the tape's cache, else asked for (just the
// two states a view needs first, then the window around them), the patch computed from the
// two states when the server did not send it; the state tree is kept when a step changed
// nothing. In the compact view the states of the next rows are read ahead.

import type { JsonPatchOperation } from "@openharness/client";
import { diff } from "../diff";
import type { Tape } from "../tape";
import { el, renderTree } from "../tree";
import type { View } from "../view";
import { renderPatch } from "./patch";

/** The elements the state and the patch are shown in. */
export interface StateElements {
  patch: HTMLElement;
  state: HTMLElement;
}

/** What the state view asks of the page. */
export interface StateHost {
  /** The open session's tape. */
  tape(): Tape | null;
  view(): View;
  /** The compact view's rows: each row's position, and the row a position is in. */
  rows(): { compactRows(): Int32Array; ownRowOf(position: number): number };
  fail(error: unknown): void;
}

/** The state and the patch at the cursor. */
export class StateAtCursor {
  /** Bumped by every `show`: an answer for an earlier one is dropped. */
  private token = 0;
  /** The state the tree shows: its tape and position, and whether nothing in it is marked. */
  private shown: { tape: Tape; position: number; unmarked: boolean } | null = null;

  constructor(
    private readonly $: StateElements,
    private readonly host: StateHost,
  ) {}

  /** The state and patch at `position`: from the cache, else read (one request for a window). */
  async show(position: number): Promise<void> {
    const tape = this.host.tape();
    if (!tape) return;
    const token = ++this.token;
    const stale = (): boolean => token !== this.token || this.host.tape() !== tape;
    if (tape.len === 0) {
      // A session whose first turn has just started: the server has nothing to fold yet (its
      // states answer 404 until the first event); live follow brings the events.
      this.$.patch.replaceChildren(el("div", "hint", "No events yet."));
      this.$.state.replaceChildren(el("div", "hint", "No events yet."));
      this.shown = null;
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
      renderPatch(this.$.patch, patch, this.host.view().position, before.known && position > 0 ? { state: before.state } : undefined);
      // The tree on screen already shows this state, nothing marked (a step over an event that
      // changed nothing, such as a text delta): keep it.
      const shown = this.shown;
      const sameState =
        shown !== null &&
        shown.tape === tape &&
        ((position === shown.position + 1 && patch.length === 0) || (position === shown.position - 1 && tape.patchAt(shown.position)?.length === 0));
      if (!(sameState && shown.unmarked && patch.length === 0)) {
        if (here.known) renderTree(this.$.state, here.state, new Set(patch.map((op) => op.path)));
        else this.$.state.textContent = "(state not available)";
      }
      this.shown = here.known ? { tape, position, unmarked: patch.length === 0 } : null;
      this.$.state.classList.remove("loading");
      delete document.body.dataset.loading;
      document.body.dataset.view = String(position);
      if (this.host.view().compact) this.prefetchRows(position);
      else if (cold) {
        tape.loadWindow(position, this.host.view().direction).catch(() => {
          // The step that needs it asks again and reports the error.
        });
      } else tape.prefetch(position, this.host.view().direction);
    } catch (error) {
      if (!stale()) this.host.fail(error);
    }
  }

  /**
   * The compact view steps from call to call, far apart: read ahead the states of the next rows
   * (and of the positions just before them, for their patches) in one request.
   */
  private prefetchRows(position: number): void {
    const tape = this.host.tape();
    if (!tape) return;
    const timeline = this.host.rows();
    const rows = timeline.compactRows();
    const row = timeline.ownRowOf(position);
    const direction = this.host.view().direction;
    // The positions of the next `count` rows, and of those just before them.
    const next = (count: number): number[] => {
      const positions: number[] = [];
      for (let i = 1; i <= count; i++) {
        const p = rows[row + i * direction];
        if (p !== undefined) positions.push(p, p - 1);
      }
      return positions;
    };
    if (next(16).every((p) => p < 0 || tape.stateAt(p).known)) return;
    tape.loadPositions(next(40)).catch(() => {
      // The step that needs them asks again and reports the error.
    });
  }
}
