// A page that uses the UNMODIFIED `useChat` of @ai-sdk/react (the version is the entry's choice)
// against `POST /api/chat` and `GET /api/chat/{id}/stream` (resume), with its default transport.
//
// `?id=<chat id>` reopens a chat (no `id`: useChat makes its own, which the page shows);
// `?history=1` first reads the chat's messages from `GET /sessions/{id}/messages?shape=ui` and
// gives them to useChat as its initial messages, as an app reloading a chat would.
import { useState } from "react";
import { createRoot } from "react-dom/client";

type UiMessage = { id: string; role: string; parts: { type: string; text?: string; data?: unknown }[] };

type UseChat = (options: { id?: string; messages?: UiMessage[]; resume?: boolean }) => {
  id: string;
  messages: UiMessage[];
  sendMessage: (message: { text: string }) => unknown;
  status: string;
  error: Error | undefined;
};

function Chat({ useChat, id, history, version }: { useChat: UseChat; id: string | null; history: UiMessage[] | null; version: string }) {
  // Only the keys given: useChat makes a new chat on every render whose `id` key differs from
  // the chat's id (an `id: undefined` included).
  const options: Parameters<UseChat>[0] = { resume: true };
  if (id !== null) options.id = id;
  if (history !== null) options.messages = history;
  const chat = useChat(options);
  const { messages, sendMessage, status, error } = chat;
  const [input, setInput] = useState("");
  return (
    <div>
      <h1>useChat {version}</h1>
      <p>
        chat <code data-testid="chat-id">{chat.id}</code>
      </p>
      <ol data-testid="messages">
        {messages.map((m) => (
          <li key={m.id} data-id={m.id} data-role={m.role} data-testid="message">
            {m.parts.map((p, i) => (
              <span key={i} data-part={p.type}>
                {p.type === "text" ? p.text : p.type.startsWith("data-") ? JSON.stringify(p.data) : ""}
              </span>
            ))}
          </li>
        ))}
      </ol>
      <p data-testid="status">{status}</p>
      {error ? <p data-testid="error">{error.message}</p> : null}
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void sendMessage({ text: input });
          setInput("");
        }}
      >
        <input data-testid="input" value={input} onChange={(e) => setInput(e.target.value)} />
        <button type="submit">Send</button>
      </form>
    </div>
  );
}

export async function mount(useChat: UseChat, version: string): Promise<void> {
  const params = new URLSearchParams(location.search);
  const id = params.get("id");
  let history: UiMessage[] | null = null;
  if (id !== null && params.get("history") === "1") {
    const answer = await fetch(`/sessions/${encodeURIComponent(id)}/messages?shape=ui`);
    if (!answer.ok) throw new Error(`reading the chat's messages answered ${answer.status}`);
    history = (await answer.json()) as UiMessage[];
  }
  createRoot(document.getElementById("root")!).render(<Chat useChat={useChat} id={id} history={history} version={version} />);
}
