/**
 * `WorkflowChat`: a zero-config chat over a workflow — messages (text, tool calls, structured
 * outputs, requests to a person and their answers), an input that answers an open
 * `input:requested`, tape controls whose moves show the messages and state of that moment.
 */
import type { ChatMessage, ChatPart } from "@openharness/client";
import { useWorkflow, type UseWorkflowResult } from "./useWorkflow.js";
import type { WorkflowOptions } from "./controller.js";

/** Props: the workflow's options (or none inside a `WorkflowProvider`), and what to show. */
export interface WorkflowChatProps extends Partial<WorkflowOptions> {
  /** A heading. */
  title?: string;
  /** The input's placeholder (default "Send a message"). */
  placeholder?: string;
  /** Show the tape controls (default true). */
  showTape?: boolean;
  /** Show the state at the cursor (default true). */
  showState?: boolean;
  className?: string;
}

/** A chat with tape controls, ready to drop in. */
export function WorkflowChat({ title, placeholder, showTape = true, showState = true, className, ...options }: WorkflowChatProps) {
  const chat = useWorkflow(options.api !== undefined ? (options as WorkflowOptions) : undefined);
  const { messages, input, setInput, handleSubmit, isLoading, error, status, pendingRequest, tape } = chat;
  const answering = pendingRequest && tape.isRecording;
  return (
    <div className={className ?? "oh-chat"} data-testid="oh-chat" data-status={status} style={styles.root}>
      {title ? <h2 style={styles.title}>{title}</h2> : null}
      <ol style={styles.list} aria-label="messages" data-testid="oh-messages">
        {messages.map((m) => (
          <Message key={m.id} message={m} />
        ))}
      </ol>
      {error ? (
        <p role="alert" data-testid="oh-error" style={styles.error}>
          {error.message}
          {chat.connection === "gave-up" ? (
            <button type="button" onClick={chat.reconnect} style={styles.button}>
              Reconnect
            </button>
          ) : null}
        </p>
      ) : null}
      <form onSubmit={handleSubmit} style={styles.form}>
        <input
          aria-label={answering ? `Answer: ${pendingRequest.prompt}` : "Message"}
          data-testid="oh-input"
          value={input}
          placeholder={answering ? pendingRequest.prompt : (placeholder ?? "Send a message")}
          onChange={(e) => setInput(e.target.value)}
          style={styles.input}
        />
        {isLoading ? (
          <button type="button" onClick={() => void chat.stop()} style={styles.button}>
            Stop
          </button>
        ) : (
          <button type="submit" disabled={input.trim() === ""} data-testid="oh-send" style={styles.button}>
            {answering ? "Answer" : "Send"}
          </button>
        )}
      </form>
      {showTape ? <TapeControls chat={chat} /> : null}
      {showState ? (
        <details style={styles.state} open>
          <summary>State at {tape.position}</summary>
          <pre data-testid="oh-state" aria-busy={tape.isLoadingState}>
            {chat.state === undefined ? "…" : JSON.stringify(chat.state, null, 2)}
          </pre>
        </details>
      ) : null}
    </div>
  );
}

function TapeControls({ chat }: { chat: UseWorkflowResult }) {
  const { tape } = chat;
  const empty = tape.length === 0;
  return (
    <div role="toolbar" aria-label="tape" data-testid="oh-tape" style={styles.tape}>
      <button type="button" aria-label="Rewind" onClick={tape.rewind} disabled={empty || tape.position === 0} style={styles.button}>
        «
      </button>
      <button type="button" aria-label="Step back" onClick={tape.stepBack} disabled={empty || tape.position === 0} style={styles.button}>
        ‹
      </button>
      {tape.isPlaying ? (
        <button type="button" aria-label="Pause" onClick={tape.pause} style={styles.button}>
          ❚❚
        </button>
      ) : (
        <button type="button" aria-label="Play" onClick={() => tape.play()} disabled={empty} style={styles.button}>
          ▶
        </button>
      )}
      <button type="button" aria-label="Step" onClick={tape.step} disabled={tape.position >= tape.length} style={styles.button}>
        ›
      </button>
      <button type="button" aria-label="Live" onClick={() => tape.stepTo(tape.length)} disabled={tape.isRecording} style={styles.button}>
        »
      </button>
      <input
        type="range"
        aria-label="Position"
        min={0}
        max={tape.length}
        value={tape.position}
        onChange={(e) => tape.stepTo(Number(e.target.value))}
        style={styles.range}
      />
      <span data-testid="oh-position">
        {tape.position} / {tape.length}
      </span>
      <span data-testid="oh-mode" style={tape.isRecording ? styles.live : styles.replay}>
        {tape.isRecording ? "live" : tape.isPlaying ? "playing" : "replaying"}
      </span>
    </div>
  );
}

function Message({ message }: { message: ChatMessage }) {
  const who = message.role === "user" ? "You" : (message.metadata?.agent ?? "Assistant");
  return (
    <li data-testid="oh-message" data-role={message.role} data-id={message.id} style={message.role === "user" ? styles.user : styles.assistant}>
      <strong style={styles.who}>{who}</strong>
      {message.parts.map((part, i) => (
        <Part key={partKey(part, i)} part={part} />
      ))}
      {message.parts.length === 0 ? <em style={styles.muted}>…</em> : null}
    </li>
  );
}

function partKey(part: ChatPart, index: number): string {
  if ("id" in part) return part.id;
  if ("toolCallId" in part) return part.toolCallId;
  return `${part.type}-${index}`;
}

function Part({ part }: { part: ChatPart }) {
  switch (part.type) {
    case "text":
      return <p style={styles.text}>{part.text}</p>;
    case "data-output":
      return <Output value={part.data.output} />;
    case "data-input-requested":
      return (
        <p data-testid="oh-request" style={styles.request}>
          {part.data.prompt}
          {part.data.answer !== undefined ? <span style={styles.muted}> — answered “{part.data.answer}”</span> : null}
        </p>
      );
    case "data-error":
      return (
        <p role="alert" style={styles.error}>
          {part.data.message}
        </p>
      );
    default:
      return (
        <div data-testid="oh-tool" style={styles.tool}>
          <code>{part.type.slice(5)}</code> <code>{JSON.stringify(part.input)}</code>
          {part.state === "output-available" ? <code> → {JSON.stringify(part.output)}</code> : null}
          {part.state === "output-error" ? <span style={styles.error}> ✗ {part.errorText}</span> : null}
        </div>
      );
  }
}

/** A structured output: its text when it holds one string (`{reply: "…"}`), else its JSON. */
function Output({ value }: { value: unknown }) {
  if (typeof value === "string") return <p style={styles.text}>{value}</p>;
  if (value && typeof value === "object" && !Array.isArray(value)) {
    const fields = Object.values(value as Record<string, unknown>);
    if (fields.length === 1 && typeof fields[0] === "string") return <p style={styles.text}>{fields[0]}</p>;
  }
  return <pre style={styles.pre}>{JSON.stringify(value, null, 2)}</pre>;
}

const styles = {
  root: { fontFamily: "system-ui, sans-serif", maxWidth: 720, display: "grid", gap: 8 },
  title: { margin: 0, fontSize: 18 },
  list: { listStyle: "none", padding: 0, margin: 0, display: "grid", gap: 6 },
  user: { background: "#eef4ff", borderRadius: 8, padding: "6px 10px", justifySelf: "end" as const },
  assistant: { background: "#f5f5f5", borderRadius: 8, padding: "6px 10px" },
  who: { fontSize: 12, color: "#555", display: "block" },
  text: { margin: "2px 0", whiteSpace: "pre-wrap" as const },
  pre: { margin: "2px 0", fontSize: 12 },
  tool: { fontSize: 12, margin: "2px 0" },
  request: { margin: "2px 0", fontStyle: "italic" },
  muted: { color: "#777" },
  error: { color: "#b00020" },
  form: { display: "flex", gap: 6 },
  input: { flex: 1, padding: 6 },
  button: { padding: "4px 10px" },
  tape: { display: "flex", gap: 6, alignItems: "center", flexWrap: "wrap" as const },
  range: { flex: 1, minWidth: 120 },
  live: { color: "#b00020", fontWeight: 600 },
  replay: { color: "#1a5fb4", fontWeight: 600 },
  state: { fontSize: 12 },
} as const;
