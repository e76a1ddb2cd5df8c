/**
 * Chat messages derived from a session's events in the browser, so a tape move shows the
 * messages at any position without asking the server. A TypeScript port of the server's message
 * projection (crates/projection/src/project.rs): the messages, their ids and their text, tool and
 * `data-output` parts are exactly those of `GET /sessions/{id}/messages?shape=ui` (the tests
 * compare them at every position of real sessions).
 *
 * Client-only, on top of what the server projects (the server's messages have neither):
 * - `data-input-requested` parts (a request to a person, with its answer once given), and
 * - `data-error` parts (an `error:occurred`),
 * put in the newest open agent call's message, or in a message of their own (`metadata.kind`
 * `input-request` / `error`) when no agent call is open. Drop those parts and messages and what
 * is left equals the server's UI messages.
 *
 * Message ids are `msg-<id of the event that opened the message>`: stable across renders,
 * reloads and tape moves.
 */
import type { Recorded, Role, TextState, ToolState } from "./generated/wire.js";

/** A text part (streaming until its agent call completes). */
export interface TextPart {
  type: "text";
  text: string;
  state: TextState;
}

/** A tool call, `type` being `tool-<tool name>` as in AI SDK 5. */
export interface ToolPart {
  type: `tool-${string}`;
  toolCallId: string;
  state: ToolState;
  input: unknown;
  output?: unknown;
  errorText?: string;
}

/**
 * An agent's structured output (`agent:completed`'s `output`), added after the agent's text and
 * tool parts when its call completes: the server's `data-output` part, and the chat stream's
 * `data-output` chunk.
 */
export interface OutputPart {
  type: "data-output";
  data: { agent: string; output: unknown };
}

/**
 * A request to a person (`input:requested`), answered once `input:received` names it.
 * Client-only: the server's projection has no such part.
 */
export interface InputRequestPart {
  type: "data-input-requested";
  /** The id of the `input:requested` event: the `request` to answer with. */
  id: string;
  data: { requestId: string; prompt: string; answer?: string };
}

/** An `error:occurred`. Client-only: the server's projection has no such part. */
export interface ErrorPart {
  type: "data-error";
  id: string;
  data: { code: string; message: string; recoverable: boolean };
}

export type ChatPart = TextPart | ToolPart | OutputPart | InputRequestPart | ErrorPart;

/** A chat message: the AI SDK 5 `UIMessage` shape, plus `content` (AI SDK 4). */
export interface ChatMessage {
  /** `msg-<event id>`: stable. */
  id: string;
  role: Role;
  /**
   * `{agent}` for an agent's message; `{kind: "input-request" | "error"}` for a message made
   * only to hold a request or an error that came outside any agent call.
   */
  metadata?: { agent?: string; kind?: "input-request" | "error" };
  parts: ChatPart[];
  /** The text of every text part, concatenated (AI SDK 4's `content`). */
  content: string;
}

interface Open {
  agent: string;
  openedBy: string;
  trigger: string | null;
  index: number;
  attempt: number;
}

/** Builds messages event by event: `apply` each event in order, read `messages()`. */
export class MessageProjection {
  private list: ChatMessage[] = [];
  private open: Open[] = [];
  private requests = new Map<string, InputRequestPart>();
  private applied = 0;

  /** How many events were applied. */
  get length(): number {
    return this.applied;
  }

  /** Applies one event (events this projection does not know are skipped). */
  apply(event: Recorded): void {
    this.applied++;
    const p = (event.payload ?? {}) as Record<string, unknown>;
    const str = (v: unknown): string => (typeof v === "string" ? v : "");
    switch (event.name) {
      case "user:input":
        this.list.push(message(event, "user", [{ type: "text", text: str(p.text), state: "done" }]));
        break;
      case "agent:started":
        this.openCall(event, str(p.agentName));
        break;
      case "text:delta": {
        const index = this.indexFor(event, str(p.agentName));
        const attempt = typeof p.attempt === "number" ? p.attempt : 1;
        const open = this.open.find((o) => o.index === index);
        const msg = this.list[index]!;
        if (open && attempt > open.attempt) {
          open.attempt = attempt;
          msg.parts = msg.parts.filter((part) => !(part.type === "text" && part.state === "streaming"));
        }
        const last = msg.parts[msg.parts.length - 1];
        if (last?.type === "text" && last.state === "streaming") last.text += str(p.delta);
        else msg.parts.push({ type: "text", text: str(p.delta), state: "streaming" });
        break;
      }
      case "text:complete":
        completeText(this.list[this.indexFor(event, str(p.agentName))]!, str(p.fullText));
        break;
      case "tool:called":
        this.list[this.indexFor(event, str(p.agentName))]!.parts.push({
          type: `tool-${str(p.toolName)}`,
          toolCallId: str(p.toolId),
          state: "input-available",
          input: p.input ?? null,
        });
        break;
      case "tool:result":
        this.toolResult(event, p);
        break;
      case "agent:completed": {
        const agent = str(p.agentName);
        const found = this.findOpen(event, agent);
        if (found === null) break;
        const open = this.open.splice(found, 1)[0]!;
        const msg = this.list[open.index]!;
        for (const part of msg.parts) if (part.type === "text") part.state = "done";
        if (p.output !== undefined && p.output !== null) {
          msg.parts.push({ type: "data-output", data: { agent, output: p.output } });
        }
        break;
      }
      case "input:requested": {
        const part: InputRequestPart = {
          type: "data-input-requested",
          id: event.id,
          data: { requestId: event.id, prompt: str(p.prompt) },
        };
        this.requests.set(event.id, part);
        this.dataPart(event, part, "input-request");
        break;
      }
      case "input:received": {
        const request = this.requests.get(str(p.requestId));
        if (request) request.data = { ...request.data, answer: str(p.text) };
        break;
      }
      case "error:occurred":
        this.dataPart(
          event,
          {
            type: "data-error",
            id: event.id,
            data: { code: str(p.code), message: str(p.message), recoverable: p.recoverable === true },
          },
          "error",
        );
        break;
      default:
        break;
    }
  }

  /** The messages so far (fresh objects: safe to keep while more events are applied). */
  messages(): ChatMessage[] {
    return this.list.map((m) => {
      const copy: ChatMessage = {
        ...m,
        parts: m.parts.map((part) => (part.type.startsWith("data-") ? { ...part, data: { ...(part as OutputPart).data } } : { ...part }) as ChatPart),
        content: m.parts.map((part) => (part.type === "text" ? (part as TextPart).text : "")).join(""),
      };
      if (m.metadata) copy.metadata = { ...m.metadata };
      return copy;
    });
  }

  private openCall(event: Recorded, agent: string): number {
    const index = this.list.length;
    const msg = message(event, "assistant", []);
    msg.metadata = { agent };
    this.list.push(msg);
    this.open.push({ agent, openedBy: event.id, trigger: event.causedBy ?? null, index, attempt: 1 });
    return index;
  }

  private findOpen(event: Recorded, agent: string): number | null {
    const cause = event.causedBy ?? null;
    if (cause !== null) {
      const exact = this.open.findIndex((o) => o.agent === agent && (o.trigger === cause || o.openedBy === cause));
      if (exact !== -1) return exact;
    }
    for (let i = this.open.length - 1; i >= 0; i--) if (this.open[i]!.agent === agent) return i;
    return null;
  }

  private indexFor(event: Recorded, agent: string): number {
    const found = this.findOpen(event, agent);
    return found === null ? this.openCall(event, agent) : this.open[found]!.index;
  }

  private toolResult(event: Recorded, p: Record<string, unknown>): void {
    const id = typeof p.toolId === "string" ? p.toolId : "";
    const agent = typeof p.agentName === "string" ? p.agentName : "";
    const found = this.findOpen(event, agent);
    const order = found === null ? [] : [this.open[found]!.index];
    for (let i = this.list.length - 1; i >= 0; i--) order.push(i);
    let part: ToolPart | undefined;
    for (const index of order) {
      part = this.list[index]!.parts.find((x): x is ToolPart => x.type.startsWith("tool-") && (x as ToolPart).toolCallId === id);
      if (part) break;
    }
    if (!part) {
      part = { type: `tool-${typeof p.toolName === "string" ? p.toolName : ""}`, toolCallId: id, state: "input-available", input: null };
      this.list[this.indexFor(event, agent)]!.parts.push(part);
    }
    if (p.isError === true) {
      delete part.output;
      part.errorText = typeof p.output === "string" ? p.output : JSON.stringify(p.output);
      part.state = "output-error";
    } else {
      part.output = p.output;
      delete part.errorText;
      part.state = "output-available";
    }
  }

  /** Puts a data part in the newest open agent call's message, or a message of its own. */
  private dataPart(event: Recorded, part: ChatPart, kind: "input-request" | "error"): void {
    const open = this.open[this.open.length - 1];
    if (open) {
      this.list[open.index]!.parts.push(part);
      return;
    }
    const msg = message(event, "assistant", [part]);
    msg.metadata = { kind };
    this.list.push(msg);
  }
}

/** The messages after `events` (all of them, in order). */
export function deriveMessages(events: readonly Recorded[]): ChatMessage[] {
  const projection = new MessageProjection();
  for (const event of events) projection.apply(event);
  return projection.messages();
}

function message(event: Recorded, role: Role, parts: ChatPart[]): ChatMessage {
  return { id: `msg-${event.id}`, role, parts, content: "" };
}

function completeText(msg: ChatMessage, complete: string): void {
  const streaming: number[] = [];
  msg.parts.forEach((part, i) => {
    if (part.type === "text" && part.state === "streaming") streaming.push(i);
  });
  if (streaming.length === 0) {
    msg.parts.push({ type: "text", text: complete, state: "done" });
    return;
  }
  const last = streaming[streaming.length - 1]!;
  const prefix = streaming
    .slice(0, -1)
    .map((i) => (msg.parts[i] as TextPart).text)
    .join("");
  if (complete.startsWith(prefix)) {
    for (const i of streaming) {
      const part = msg.parts[i] as TextPart;
      if (i === last) part.text = complete.slice(prefix.length);
      part.state = "done";
    }
  } else {
    for (const i of streaming.slice(1).reverse()) msg.parts.splice(i, 1);
    msg.parts[streaming[0]!] = { type: "text", text: complete, state: "done" };
  }
}
