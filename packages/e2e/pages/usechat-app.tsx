// A page that uses the UNMODIFIED `useChat` of @ai-sdk/react (the version is the entry's choice)
// against `POST /api/chat` and `GET /api/chat/{id}/stream` (resume), with its default transport.
import { useState } from "react";
import { createRoot } from "react-dom/client";

type UseChat = (options: { id?: string; resume?: boolean }) => {
  messages: { id: string; role: string; parts: { type: string; text?: string; data?: unknown }[] }[];
  sendMessage: (message: { text: string }) => unknown;
  status: string;
  error: Error | undefined;
};

function Chat({ useChat, id, version }: { useChat: UseChat; id: string; version: string }) {
  const { messages, sendMessage, status, error } = useChat({ id, resume: true });
  const [input, setInput] = useState("");
  return (
    <div>
      <h1>useChat {version}</h1>
      <ol data-testid="messages">
        {messages.map((m) => (
          <li key={m.id} data-role={m.role} data-testid="message">
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

export function mount(useChat: UseChat, version: string): void {
  const id = new URLSearchParams(location.search).get("id") ?? "";
  createRoot(document.getElementById("root")!).render(<Chat useChat={useChat} id={id} version={version} />);
}
