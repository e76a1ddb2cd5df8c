// The chat view: the session's UI messages (`GET /sessions/{id}/messages?shape=ui&at=p`, what an
// AI SDK `useChat` page shows) at the cursor's position, moving with it. Read once the keys
// pause (a held arrow key asks for none of the positions it passes), cached per position.

import type { OpenHarnessClient, UiMessage, UiPart } from "@openharness/client";
import { el } from "../tree";

/** Positions whose messages are kept (a few screens of stepping back and forth). */
const CACHED = 200;
/** How long the cursor rests before its messages are read, in milliseconds. */
const SETTLE = 80;

export class ChatPanel {
  private readonly cache = new Map<string, UiMessage[]>();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private wanted = "";
  /** The panel is on screen: while hidden nothing is read. */
  visible = false;

  constructor(
    private readonly box: HTMLElement,
    private readonly client: () => OpenHarnessClient,
    private readonly fail: (error: unknown) => void,
  ) {}

  /** Shows the messages of `session` at `position` (from the cache at once, else once read). */
  show(session: string | null, position: number): void {
    clearTimeout(this.timer);
    if (session === null) {
      this.wanted = "";
      this.box.replaceChildren();
      return;
    }
    const key = `${session}@${position}`;
    this.wanted = key;
    if (!this.visible) return;
    const cached = this.cache.get(key);
    if (cached) {
      this.render(cached, position);
      return;
    }
    this.box.classList.add("loading");
    this.timer = setTimeout(() => void this.read(session, position, key), SETTLE);
  }

  /** Forgets a session's messages (new events arrived at its end). */
  forget(session: string): void {
    for (const key of [...this.cache.keys()]) if (key.startsWith(`${session}@`)) this.cache.delete(key);
  }

  private async read(session: string, position: number, key: string): Promise<void> {
    try {
      const messages = await this.client().messages(session, { at: position, shape: "ui" });
      this.cache.set(key, messages);
      if (this.cache.size > CACHED) this.cache.delete(this.cache.keys().next().value!);
      if (this.wanted === key) this.render(messages, position);
    } catch (error) {
      if (this.wanted === key) this.fail(error);
    }
  }

  private render(messages: readonly UiMessage[], position: number): void {
    this.box.classList.remove("loading");
    this.box.dataset.position = String(position);
    if (messages.length === 0) {
      this.box.replaceChildren(el("div", "hint", position === 0 ? "No messages at position 0." : "No chat messages up to here."));
      return;
    }
    this.box.replaceChildren(...messages.map(messageView));
    this.box.scrollTop = this.box.scrollHeight;
  }
}

/** One message: who says it (the agent's name for an agent's), then its parts. */
export function messageView(message: UiMessage): HTMLElement {
  const box = el("div", `message ${message.role}`);
  box.dataset.id = message.id;
  const agent = typeof message.metadata?.agent === "string" ? message.metadata.agent : null;
  box.append(el("div", "who", agent ? `${message.role} · ${agent}` : message.role));
  for (const part of message.parts) {
    const view = partView(part);
    if (view) box.append(view);
  }
  return box;
}

function partView(part: UiPart): HTMLElement | null {
  if (part.type === "step-start") return null;
  if (part.type === "text" && "text" in part) {
    const text = el("div", "part text", part.text);
    if (part.state === "streaming") text.classList.add("streaming");
    return text;
  }
  if ("toolCallId" in part) {
    const name = "toolName" in part ? part.toolName : part.type.replace(/^tool-/, "");
    const tool = el("details", `part tool ${part.state}`);
    const summary = document.createElement("summary");
    summary.append(el("span", "tool-name", name), el("span", "hint", ` ${part.state}`));
    tool.append(summary, el("pre", "tool-input", json(part.input)));
    if (part.output !== undefined) tool.append(el("pre", "tool-output", json(part.output)));
    if (part.errorText) tool.append(el("div", "error-text", part.errorText));
    return tool;
  }
  if ("data" in part) {
    const data = el("details", "part data");
    const summary = document.createElement("summary");
    summary.textContent = part.type.replace(/^data-/, "");
    data.append(summary, el("pre", "", json(part.data)));
    return data;
  }
  return null;
}

function json(value: unknown): string {
  const text = JSON.stringify(value, null, 2) ?? "";
  return text.length > 4000 ? text.slice(0, 4000) + "…" : text;
}
