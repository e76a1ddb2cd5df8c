import { WorkflowChat, WorkflowProvider, useWorkflow } from "@openharness/react";

// `openharness serve` answers on the same origin here (or pass its URL, e.g. "http://127.0.0.1:8080").
const api = "";

/** The state of the `chat` example workflow. */
interface ChatState {
  exchanges: { user: string; reply: string | null }[];
}

function Summary() {
  // Inside a WorkflowProvider, useWorkflow() reads the shared workflow.
  const { state, tape, status } = useWorkflow<ChatState>();
  const answered = state?.exchanges.filter((e) => e.reply !== null).length ?? 0;
  return (
    <p data-testid="summary">
      {status} · {answered} answered at position {tape.position} of {tape.length}
    </p>
  );
}

export function App() {
  return (
    <WorkflowProvider api={api} workflow="chat">
      <WorkflowChat title="Open Harness chat" />
      <Summary />
    </WorkflowProvider>
  );
}
