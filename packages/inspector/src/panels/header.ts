// The header: the open session's workflow and id, its status, length, lineage and how much of
// it has been read, and warnings when other code recorded it or today's handlers fold it to
// another state than its live run recorded; the follow button's state; what the input box
// will do.

import type { CodeChange, SessionDetail, StateCheck } from "@openharness/client";
import type { Tape } from "../tape";

export interface HeaderElements {
  title: HTMLElement;
  meta: HTMLElement;
  follow: HTMLElement;
  inputHint: HTMLElement;
}

export function renderHeader(
  $: HeaderElements,
  summary: SessionDetail | null,
  tape: Tape | null,
  following: boolean,
  stateCheck: StateCheck | null = null,
): void {
  if (!summary || !tape) {
    $.title.textContent = "No session open";
    $.meta.textContent = "Pick a session on the left.";
    return;
  }
  $.title.textContent = `${summary.workflow ?? "?"} · ${summary.id}`;
  const parts = [`${summary.status}`, `${tape.len} events`];
  if (summary.parent) parts.push(`fork of ${summary.parent.slice(-12)}`);
  if (tape.scanned < tape.len) parts.push(`reading ${Math.floor((tape.scanned / Math.max(1, tape.len)) * 100)}%`);
  $.meta.textContent = parts.join(" · ");
  const change = summary.codeChange;
  if (change) {
    // Stepping folds the log with today's handlers: say when they are not the recording's.
    const warning = document.createElement("span");
    warning.className = "code-changed";
    warning.textContent = " · ⚠ recorded by other code";
    warning.title = codeChangeText(change);
    $.meta.append(warning);
  }
  const parted = stateCheck?.divergence;
  if (parted) {
    // Its states here are today's fold, and they are not the ones the live run had.
    const warning = document.createElement("span");
    warning.className = "code-changed state-parted";
    warning.textContent = ` · ⚠ state parts from the recording at position ${parted.seq + 1}`;
    warning.title = stateDivergenceText(parted);
    $.meta.append(warning);
  }
  $.follow.classList.toggle("on", following);
  const waiting = summary.status === "waiting";
  $.inputHint.textContent = waiting ? "answers the open input request" : summary.status === "running" ? "a turn is running" : "starts a new turn";
}

/** What changed, as `openharness tape` says it: the recorded code, then today's. */
export function codeChangeText(change: CodeChange): string {
  const describe = (code: string | null | undefined, version: string | null | undefined, commit: string | null | undefined) =>
    [code ? `code ${code}` : "code of unknown fingerprint", version ? `version ${version}` : null, commit ? `commit ${commit}` : null].filter(Boolean).join(", ");
  return `recorded by ${describe(change.recorded, change.recordedVersion, change.recordedCommit)}; this server runs ${describe(change.today, change.todayVersion, change.todayCommit)}. States are folded with today's handlers.`;
}

/** Where today's handlers part from the recorded state, as `openharness replay` says it. */
export function stateDivergenceText(parted: NonNullable<StateCheck["divergence"]>): string {
  return `Today's handlers fold this session to another state after seq ${parted.seq} (${parted.event}) than its live run recorded (state hash ${parted.recordedHash.slice(0, 12)}, today ${parted.todayHash.slice(0, 12)}): states from there on may not be the live run's. \`openharness replay\` shows the difference.`;
}
