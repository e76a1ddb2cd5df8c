// The lower detail pane's views, one at a time behind tabs: the state tree (the page draws it),
// the chat at the cursor, the lineage with a fork form, and the comparison with the parent (or
// a session picked in the lineage). Each view reads only while it is shown.

import type { ForkChange, OpenHarnessClient, SessionComparison } from "@openharness/client";
import { el } from "../tree";
import { ChatPanel } from "./chat";
import { type Following, readFollowing, readLineage, renderComparison, renderLineage } from "./lineage";

export const TABS = ["state", "chat", "forks", "compare"] as const;
export type Tab = (typeof TABS)[number];

/** What the views need of the page. */
export interface ViewsHost {
  client(): OpenHarnessClient;
  /** Opens a session (at a position; its end when absent). */
  openSession(session: string, at?: number): void;
  fail(error: unknown): void;
  note(text: string): void;
}

/** The open session as the views see it. */
interface Open {
  id: string;
  parent: string | null;
  position: number;
}

export class DetailViews {
  private tab: Tab = "state";
  private open: Open | null = null;
  private readonly chat: ChatPanel;
  /** The session the Compare view compares with (the parent unless one was picked). */
  private comparedWith: string | null = null;
  private shownLineage = "";
  private shownComparison = "";
  private readonly comparisons = new Map<string, [SessionComparison, [Following | null, Following | null]]>();

  constructor(
    private readonly $: {
      tabs: HTMLElement;
      state: HTMLElement;
      chat: HTMLElement;
      forks: HTMLElement;
      compare: HTMLElement;
      lineage: HTMLElement;
      forkForm: HTMLFormElement;
      forkAt: HTMLInputElement;
      forkInput: HTMLInputElement;
      forkAnswer: HTMLInputElement;
      forkState: HTMLTextAreaElement;
      forkProvider: HTMLSelectElement;
      forkError: HTMLElement;
    },
    private readonly host: ViewsHost,
  ) {
    this.chat = new ChatPanel($.chat, () => host.client(), (error) => host.fail(error));
    $.tabs.addEventListener("click", (event) => {
      const tab = (event.target as HTMLElement).closest<HTMLElement>("[data-tab]")?.dataset.tab;
      if (tab) this.show(tab as Tab);
    });
    for (const box of [$.forks, $.compare]) {
      box.addEventListener("click", (event) => {
        const target = event.target as HTMLElement;
        const compare = target.closest<HTMLElement>("[data-compare-with]")?.dataset.compareWith;
        if (compare) {
          this.comparedWith = compare;
          this.show("compare");
          return;
        }
        const link = target.closest<HTMLElement>("[data-session]");
        if (link?.dataset.session) host.openSession(link.dataset.session, link.dataset.at ? Number(link.dataset.at) : undefined);
      });
    }
    $.forkForm.addEventListener("submit", (event) => {
      event.preventDefault();
      void this.forkWithChanges();
    });
  }

  get current(): Tab {
    return this.tab;
  }

  /** Shows `tab`'s view (and reads what it needs). */
  show(tab: Tab): void {
    this.tab = tab;
    for (const button of this.$.tabs.querySelectorAll<HTMLElement>("[data-tab]")) button.setAttribute("aria-selected", String(button.dataset.tab === tab));
    for (const panel of [this.$.state, this.$.chat, this.$.forks, this.$.compare]) panel.hidden = panel.dataset.panel !== tab;
    this.chat.visible = tab === "chat";
    this.refresh();
  }

  /** Shows the comparison of the open session with `other`. */
  compareWith(other: string): void {
    this.comparedWith = other;
    this.show("compare");
  }

  /** The next tab, round. */
  cycle(): void {
    this.show(TABS[(TABS.indexOf(this.tab) + 1) % TABS.length]!);
  }

  /** A session was opened (or closed: `null`). */
  opened(session: { id: string; parent?: string | null } | null, position: number): void {
    const changed = session?.id !== this.open?.id;
    this.open = session ? { id: session.id, parent: session.parent ?? null, position } : null;
    if (changed) {
      this.comparedWith = null;
      this.shownLineage = "";
      this.shownComparison = "";
      this.$.forkError.hidden = true;
    }
    this.refresh();
  }

  /** The cursor moved. */
  moved(position: number): void {
    if (!this.open) return;
    this.open.position = position;
    if (this.tab === "chat") this.chat.show(this.open.id, position);
    if (this.tab === "forks" && document.activeElement !== this.$.forkAt) this.$.forkAt.value = String(position);
  }

  private refresh(): void {
    const open = this.open;
    if (this.tab === "chat") this.chat.show(open?.id ?? null, open?.position ?? 0);
    if (this.tab === "forks") {
      this.$.forkAt.value = String(open?.position ?? 0);
      if (!this.providersRead) void this.readProviders();
      if (open && this.shownLineage !== open.id) void this.showLineage(open.id);
      if (!open) this.$.lineage.replaceChildren();
    }
    if (this.tab === "compare") void this.showComparison();
  }

  private providersRead = false;

  /** The server's other models for forks (`GET /providers`), as the form's choices. */
  private async readProviders(): Promise<void> {
    this.providersRead = true;
    try {
      const { providers } = await this.host.client().providers();
      const select = this.$.forkProvider;
      for (const { name } of providers) {
        const option = document.createElement("option");
        option.value = name;
        option.textContent = `with ${name}`;
        select.append(option);
      }
      select.hidden = providers.length === 0;
    } catch (error) {
      this.providersRead = false;
      this.host.fail(error);
    }
  }

  private async showLineage(id: string): Promise<void> {
    this.shownLineage = id;
    this.$.lineage.replaceChildren(el("div", "hint", "reading the lineage…"));
    try {
      const tree = await readLineage(this.host.client(), id);
      if (this.open?.id === id) renderLineage(this.$.lineage, tree, id);
    } catch (error) {
      this.shownLineage = "";
      this.host.fail(error);
    }
  }

  private async showComparison(): Promise<void> {
    const open = this.open;
    const box = this.$.compare;
    if (!open) {
      box.replaceChildren();
      return;
    }
    const other = this.comparedWith ?? open.parent;
    if (!other) {
      box.replaceChildren(el("div", "hint", "This session is no fork: pick a session to compare with under Forks."));
      return;
    }
    const key = `${open.id}:${other}`;
    if (this.shownComparison === key) return;
    this.shownComparison = key;
    box.dataset.state = "loading";
    box.replaceChildren(el("div", "hint", `comparing with ${other}…`));
    try {
      let answer = this.comparisons.get(key);
      if (!answer) {
        const comparison = await this.host.client().compare(open.id, other);
        answer = [comparison, await readFollowing(this.host.client(), comparison)];
        this.comparisons.set(key, answer);
      }
      if (this.shownComparison !== key) return;
      renderComparison(box, answer[0], answer[1]);
      box.dataset.state = "shown";
    } catch (error) {
      this.shownComparison = "";
      delete box.dataset.state;
      this.host.fail(error);
    }
  }

  /** Forks the open session at the form's position with its input, answer, state edit and model. */
  private async forkWithChanges(): Promise<void> {
    const open = this.open;
    if (!open) return;
    const error = this.$.forkError;
    error.hidden = true;
    try {
      const position = Number.parseInt(this.$.forkAt.value, 10);
      const change = forkChange(this.$.forkInput.value, this.$.forkState.value, this.$.forkProvider.value, this.$.forkAnswer.value);
      if (!Number.isFinite(position) || position < 0) throw new Error("the position is a whole number from 0");
      const { session } = await this.host.client().fork(open.id, { at: "position", position }, change);
      const how = [change.input ? "another input" : "", change.answer ? "another answer" : "", change.stateEdit ? "an edited state" : "", change.provider ? change.provider : ""].filter(Boolean);
      this.host.note(`forked ${open.id} at ${position}${how.length > 0 ? ` with ${how.join(", ")}` : ""}: ${session}`);
      this.$.forkInput.value = "";
      this.$.forkAnswer.value = "";
      this.$.forkState.value = "";
      this.host.openSession(session);
    } catch (failure) {
      error.textContent = failure instanceof Error ? failure.message : String(failure);
      error.hidden = false;
    }
  }
}

/**
 * What the fork form asks: another input (when not blank), another answer to the question open
 * at the fork point (when not blank), a state edit (a JSON merge patch: an object; anything else
 * is refused with the reason) and another provider (when one is chosen).
 */
export function forkChange(input: string, stateEdit: string, provider = "", answer = ""): ForkChange {
  const change: ForkChange = {};
  if (input.trim() !== "") change.input = input;
  if (answer.trim() !== "") change.answer = answer;
  if (stateEdit.trim() !== "") {
    let parsed: unknown;
    try {
      parsed = JSON.parse(stateEdit);
    } catch (error) {
      throw new Error(`the state edit is not JSON: ${error instanceof Error ? error.message : String(error)}`);
    }
    if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) throw new Error("the state edit is a JSON merge patch: an object, such as {\"plan\": null}");
    change.stateEdit = parsed as Record<string, unknown>;
  }
  if (provider !== "") change.provider = provider;
  return change;
}
