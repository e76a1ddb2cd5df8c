/** useWorkflow, WorkflowProvider and WorkflowChat against a real `openharness serve`. */
import { act, cleanup, fireEvent, render, renderHook, screen, waitFor } from "@testing-library/react";
import { StrictMode, type ReactNode } from "react";
import { afterEach, describe, expect, inject, it } from "vitest";
import { OpenHarnessClient, type Recorded } from "@openharness/client";
import { WorkflowChat, WorkflowProvider, useWorkflow } from "../src/index.js";
import { WEATHER_CHAT } from "../../e2e/server.js";

const api = inject("serverUrl");

interface ChatState {
  exchanges: { user: string; reply: string | null }[];
}

/** A fetch that counts requests by path (`/states`, `/messages`, ...). */
function counting() {
  const calls: string[] = [];
  const f: typeof fetch = (input, init) => {
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    calls.push(new URL(url).pathname.split("/").pop()! + new URL(url).search);
    return fetch(input, init);
  };
  return { fetch: f, calls, count: (suffix: string) => calls.filter((c) => c.startsWith(suffix)).length };
}

afterEach(cleanup);

describe("useWorkflow", () => {
  it("chats: the AI SDK 4 and 5 values move through a real turn", async () => {
    const wrapper = ({ children }: { children: ReactNode }) => <StrictMode>{children}</StrictMode>;
    const { result } = renderHook(() => useWorkflow<ChatState>("chat", { api }), { wrapper });
    expect(result.current).toMatchObject({ messages: [], input: "", isLoading: false, status: "ready", error: undefined });
    act(() => result.current.setInput("Hi there"));
    expect(result.current.input).toBe("Hi there");
    act(() => result.current.handleSubmit({ preventDefault() {} }));
    expect(result.current.status).toBe("submitted");
    expect(result.current.isLoading).toBe(true);
    expect(result.current.input).toBe("");
    await waitFor(() => expect(result.current.status).toBe("ready"));
    await waitFor(() => expect(result.current.state?.exchanges).toHaveLength(1));
    const { messages, events, state, tape, sessionId } = result.current;
    expect(sessionId).toMatch(/^[0-9a-f-]{36}$/);
    expect(events.map((e) => e.name)).toContain("workflow:completed");
    expect(tape).toMatchObject({ position: events.length, length: events.length, isRecording: true, isReplaying: false });
    expect(messages.map((m) => m.role)).toEqual(["user", "assistant"]);
    expect(messages[0]!.content).toBe("Hi there");
    expect(messages[1]!.parts[0]).toMatchObject({ type: "data-output", data: { output: { reply: expect.stringContaining("Hi there") } } });
    expect(state!.exchanges[0]!.reply).toContain("Hi there");

    // AI SDK 5 style: sendMessage({ text }) continues the same session.
    await act(() => result.current.sendMessage({ text: "Again" }));
    await waitFor(() => expect(result.current.state?.exchanges).toHaveLength(2));
    expect(result.current.sessionId).toBe(sessionId);
    expect(result.current.messages.map((m) => m.content).filter(Boolean)).toEqual(["Hi there", "Again"]);
  });

  it("message ids are stable: derived from event ids, the same across renders and tape moves", async () => {
    const { result, rerender } = renderHook(() => useWorkflow({ api, sessionId: WEATHER_CHAT }));
    await waitFor(() => expect(result.current.tape.length).toBe(24));
    const events = result.current.events;
    const ids = result.current.messages.map((m) => m.id);
    expect(ids).toEqual([1, 2, 17, 18].map((s) => `msg-${events[s]!.id}`));
    rerender();
    expect(result.current.messages.map((m) => m.id)).toEqual(ids);
    act(() => result.current.tape.stepTo(10));
    act(() => result.current.tape.stepTo(24));
    expect(result.current.messages.map((m) => m.id)).toEqual(ids);
  });

  it("a tape move updates state AND messages, reading states in batches, never one request per event", async () => {
    const counter = counting();
    const { result } = renderHook(() => useWorkflow<ChatState>({ api, sessionId: WEATHER_CHAT, fetch: counter.fetch }));
    await waitFor(() => expect(result.current.state?.exchanges).toHaveLength(2));
    expect(result.current.messages).toHaveLength(4);

    // Back to just before the first reply was recorded: one exchange, no reply yet.
    act(() => result.current.tape.stepTo(14));
    expect(result.current.tape).toMatchObject({ position: 14, isRecording: false, isReplaying: true });
    expect(result.current.messages).toHaveLength(2);
    expect(result.current.messages[1]!.parts.map((p) => p.type)).toEqual(["text", "tool-weather", "tool-forecast", "text"]);
    await waitFor(() => expect(result.current.state).toEqual({ exchanges: [{ user: "What's the weather in Lisbon?", reply: null }] }));
    act(() => result.current.tape.step());
    expect(result.current.state).toEqual({ exchanges: [{ user: "What's the weather in Lisbon?", reply: "It is sunny." }] });

    // Every position, back to the start: the states are cached, the messages derived.
    for (let p = 15; p > 0; p--) act(() => result.current.tape.stepBack());
    act(() => result.current.tape.stepBack());
    expect(result.current.tape.position).toBe(0);
    expect(result.current.state).toEqual({ exchanges: [] });
    expect(result.current.messages).toEqual([]);
    act(() => result.current.tape.rewind());
    const statesRequests = counter.count("states");
    expect(statesRequests).toBeGreaterThanOrEqual(1);
    expect(statesRequests).toBeLessThanOrEqual(3);
    expect(counter.count("messages")).toBe(0);

    // Stepping to the end follows the live end again.
    act(() => result.current.tape.stepTo(24));
    expect(result.current.tape).toMatchObject({ isRecording: true, isReplaying: false });
    expect(result.current.state?.exchanges).toHaveLength(2);
  });

  it("plays the tape forward and pauses", async () => {
    const { result } = renderHook(() => useWorkflow<ChatState>({ api, sessionId: WEATHER_CHAT }));
    await waitFor(() => expect(result.current.tape.length).toBe(24));
    act(() => result.current.tape.rewind());
    act(() => result.current.tape.playTo(3, { intervalMs: 5 }));
    expect(result.current.tape.isPlaying).toBe(true);
    await waitFor(() => expect(result.current.tape.position).toBe(3));
    await waitFor(() => expect(result.current.tape.isPlaying).toBe(false));
    expect(result.current.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
    act(() => result.current.tape.play({ intervalMs: 1000 }));
    act(() => result.current.tape.pause());
    expect(result.current.tape).toMatchObject({ isPlaying: false, position: 3 });
  });

  it("answers input:requested: the next message answers the open request", async () => {
    const { result } = renderHook(() => useWorkflow<{ release: string | null }>("planner-executor", { api }));
    await act(() => result.current.sendMessage("ship v2"));
    await waitFor(() => expect(result.current.pendingRequest?.prompt).toBe("Publish the release? (yes/no)"));
    expect(result.current.sessionStatus).toBe("waiting");
    await act(() => result.current.sendMessage("yes"));
    await waitFor(() => expect(result.current.sessionStatus).toBe("idle"));
    expect(result.current.pendingRequest).toBeNull();
    await waitFor(() => expect(result.current.state?.release).toBe("published"));
    const request = result.current.messages.flatMap((m) => m.parts).find((p) => p.type === "data-input-requested");
    expect(request).toMatchObject({ data: { prompt: "Publish the release? (yes/no)", answer: "yes" } });
  });

  it("shows a typed error from the server", async () => {
    const { result } = renderHook(() => useWorkflow("no-such-workflow", { api }));
    await act(() => result.current.sendMessage("hello"));
    expect(result.current.status).toBe("error");
    expect(result.current.error).toMatchObject({ status: 404, code: "not_found" });
  });

  it("keeps the session id and reports it running when the stream gives up", async () => {
    const client = new OpenHarnessClient({ baseUrl: api });
    const { session } = await client.createSession("chat", "hello");
    let streams = 0;
    const failing: typeof fetch = (input, init) => {
      if (new Headers(init?.headers).get("accept") === "text/event-stream") {
        streams++;
        return Promise.reject(new TypeError("offline"));
      }
      return fetch(input, init);
    };
    const { result } = renderHook(() =>
      useWorkflow({ api, sessionId: session, fetch: failing, retry: { initialDelayMs: 1, maxAttempts: 3 } }),
    );
    await waitFor(() => expect(result.current.connection).toBe("gave-up"));
    expect(streams).toBe(3);
    expect(result.current).toMatchObject({ sessionId: session, sessionStatus: "running", status: "error" });
    expect(result.current.error).toMatchObject({ name: "StreamGaveUpError", sessionId: session });
  });
});

describe("WorkflowProvider and WorkflowChat", () => {
  it("share one workflow; the chat sends, shows the reply, and its tape steps back", async () => {
    function Status() {
      const { status, tape } = useWorkflow();
      return (
        <p data-testid="status">
          {status} {tape.position}/{tape.length}
        </p>
      );
    }
    render(
      <WorkflowProvider api={api} workflow="chat">
        <WorkflowChat title="Chat" />
        <Status />
      </WorkflowProvider>,
    );
    fireEvent.change(screen.getByTestId("oh-input"), { target: { value: "Hello chat" } });
    fireEvent.submit(screen.getByTestId("oh-input").closest("form")!);
    await waitFor(() => expect(screen.getByTestId("status").textContent).toBe("ready 6/6"));
    await waitFor(() => expect(screen.getAllByTestId("oh-message")).toHaveLength(2));
    expect(screen.getAllByTestId("oh-message")[1]!.textContent).toContain('You said "Hello chat"');
    await waitFor(() => expect(screen.getByTestId("oh-state").textContent).toContain("Hello chat"));
    fireEvent.click(screen.getByRole("button", { name: "Step back" }));
    fireEvent.click(screen.getByRole("button", { name: "Step back" }));
    fireEvent.click(screen.getByRole("button", { name: "Step back" }));
    await waitFor(() => expect(screen.getByTestId("status").textContent).toBe("ready 3/6"));
    expect(screen.getByTestId("oh-mode").textContent).toBe("replaying");
    expect(screen.getAllByTestId("oh-message")[1]!.textContent).not.toContain("You said");
    await waitFor(() => expect(screen.getByTestId("oh-state").textContent).toContain('"reply": null'));
  });
});

export type { Recorded };
