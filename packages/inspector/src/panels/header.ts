// The header: the open session's workflow and id, its status, length, lineage and how much of
// it has been read; the follow button's state; what the input box will do.

import type { SessionDetail } from "@openharness/client";
import type { Tape } from "../tape";

export interface HeaderElements {
  title: HTMLElement;
  meta: HTMLElement;
  follow: HTMLElement;
  inputHint: HTMLElement;
}

export function renderHeader($: HeaderElements, summary: SessionDetail | null, tape: Tape | null, following: boolean): void {
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
  $.follow.classList.toggle("on", following);
  const waiting = summary.status === "waiting";
  $.inputHint.textContent = waiting ? "answers the open input request" : summary.status === "running" ? "a turn is running" : "starts a new turn";
}
