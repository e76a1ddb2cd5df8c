/**
 * A2A's own JavaScript client — `@a2a-js/sdk` 1.3.0, unmodified — against a real
 * `openharness serve` (`/a2a/{workflow}`, A2A v1.0 JSON-RPC): the client resolves the
 * workflow's card and sends a message (blocking), streams the next one in the same context
 * (the task, the reply as artifact chunks, then completed), reads a task back and lists the
 * context's tasks, cancels a slow turn that a second connection follows (the log records
 * `stop:requested`), and answers the planner-executor's question
 * (`TASK_STATE_INPUT_REQUIRED`) with a message naming the task — each checked against the log.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ClientFactory, type Client } from "@a2a-js/sdk/client";
import {
  CancelTaskRequest,
  GetTaskRequest,
  ListTasksRequest,
  Role,
  SendMessageRequest,
  SubscribeToTaskRequest,
  TaskState,
  type StreamResponse,
  type Task,
} from "@a2a-js/sdk";
import { startServer, type RunningServer } from "../server.js";

const api = inject("serverUrl");

/** A client of `workflow` on `base`, made from its card (the base URL ends with `/`). */
function client(base: string, workflow: string): Promise<Client> {
  return new ClientFactory().createFromUrl(`${base}/a2a/${workflow}/`);
}

/** A send request, in the wire shape the SDK reads into its own types. */
function request(text: string, extra: { contextId?: string; taskId?: string; returnImmediately?: boolean } = {}) {
  const { returnImmediately, ...ids } = extra;
  return SendMessageRequest.fromJSON({
    message: { messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text }], ...ids },
    ...(returnImmediately ? { configuration: { returnImmediately: true } } : {}),
  });
}

/** The task a blocking send answers. */
async function sent(client: Client, send: SendMessageRequest): Promise<Task> {
  const result = await client.sendMessage(send);
  expect("status" in result, JSON.stringify(result)).toBe(true);
  return result as Task;
}

/** The text of a part (`""` for another kind). */
const text = (part: { content?: { $case: string; value: unknown } }) =>
  part.content?.$case === "text" ? (part.content.value as string) : "";

async function json(url: string): Promise<any> {
  const response = await fetch(url);
  expect(response.ok, `${url}: ${response.status}`).toBe(true);
  return response.json();
}

async function names(base: string, session: string): Promise<string[]> {
  const page = await json(`${base}/sessions/${session}/events?limit=1000`);
  return page.events.map((e: any) => e.name);
}

const reply = (said: string, n: number) =>
  `(offline) You said "${said}"; that is message ${n} of our conversation.`;

describe("@a2a-js/sdk 1.3.0", () => {
  let slow: RunningServer;
  beforeAll(async () => {
    slow = await startServer({ scriptedDelayMs: 3000 });
  });
  afterAll(async () => {
    await slow?.stop();
  });

  it("sends, streams in the same context, and reads the task back", async () => {
    const chat = await client(api, "chat");
    const card = await json(`${api}/a2a/chat/.well-known/agent-card.json`);
    expect(card.supportedInterfaces[0]).toEqual({
      url: `${api}/a2a/chat`,
      protocolBinding: "JSONRPC",
      protocolVersion: "1.0",
    });

    const first = await sent(chat, request("Hello from A2A"));
    expect(first.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(first.id).toMatch(/^task_\d+_/);
    expect(text(first.artifacts[0]!.parts[0]!)).toBe(reply("Hello from A2A", 1));
    expect(first.history[0]!.role).toBe(Role.ROLE_USER);

    const events: StreamResponse[] = [];
    for await (const event of chat.sendMessageStream(request("And again", { contextId: first.contextId }))) {
      events.push(event);
    }
    const cases = events.map((e) => e.payload?.$case);
    expect(cases[0]).toBe("task");
    expect(cases).toContain("artifactUpdate");
    const last = events.at(-1)!.payload;
    expect(last?.$case).toBe("statusUpdate");
    if (last?.$case !== "statusUpdate") throw new Error("no final status");
    expect(last.value.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const streamed = events
      .flatMap((e) => (e.payload?.$case === "artifactUpdate" ? e.payload.value.artifact?.parts ?? [] : []))
      .map(text)
      .join("");
    expect(streamed).toBe(reply("And again", 2));

    const taskId = last.value.taskId;
    expect(taskId).not.toBe(first.id);
    const read = await chat.getTask(GetTaskRequest.fromJSON({ id: taskId }));
    expect(read.contextId).toBe(first.contextId);
    expect(read.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(text(read.artifacts[0]!.parts[0]!)).toBe(streamed);
    // The context's tasks, newest first.
    const listed = await chat.listTasks(ListTasksRequest.fromJSON({ contextId: first.contextId }));
    expect(listed.tasks.map((t) => t.id)).toEqual([taskId, first.id]);
    // The log holds both turns, each started by A2A.
    const page = await json(`${api}/sessions/${first.contextId}/events?limit=1000`);
    const inputs = page.events.filter((e: any) => e.name === "user:input").map((e: any) => e.payload.via);
    expect(inputs).toEqual(["a2a", "a2a"]);
  });

  it("cancels a slow turn as an event", async () => {
    const chat = await client(slow.url, "chat");
    const running = await sent(chat, request("Take your time", { returnImmediately: true }));
    expect(running.status?.state).toBe(TaskState.TASK_STATE_WORKING);
    // A second connection follows the task; it ends when the task is canceled.
    const followed = (async () => {
      const events: StreamResponse[] = [];
      for await (const event of chat.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id: running.id }))) {
        events.push(event);
      }
      return events;
    })();
    await new Promise((resolve) => setTimeout(resolve, 300));
    const canceled = await chat.cancelTask(CancelTaskRequest.fromJSON({ id: running.id }));
    expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    const events = await followed;
    expect(events[0]!.payload?.$case).toBe("task");
    const end = events.at(-1)!.payload;
    expect(end?.$case === "statusUpdate" && end.value.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    expect(await names(slow.url, running.contextId)).toContain("stop:requested");
    // Over: it cannot be canceled again.
    await expect(chat.cancelTask(CancelTaskRequest.fromJSON({ id: running.id }))).rejects.toThrow();
  });

  it("answers the question of an input-required task in the same task", async () => {
    const planner = await client(api, "planner-executor");
    const events: StreamResponse[] = [];
    for await (const event of planner.sendMessageStream(request("Ship version 0.2"))) events.push(event);
    const last = events.at(-1)!.payload;
    if (last?.$case !== "statusUpdate") throw new Error(`ended with ${last?.$case}`);
    expect(last.value.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const question = text(last.value.status!.message!.parts[0]!);
    expect(question).toContain("Publish");
    const requestId = last.value.status!.message!.metadata!.requestId;

    const answered = await sent(planner, request("yes", { taskId: last.value.taskId }));
    expect(answered.id).toBe(last.value.taskId);
    expect(answered.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(answered.history.map((m) => [m.role, text(m.parts[0]!)])).toEqual([
      [Role.ROLE_USER, "Ship version 0.2"],
      [Role.ROLE_AGENT, question],
      [Role.ROLE_USER, "yes"],
    ]);
    const page = await json(`${api}/sessions/${answered.contextId}/events?limit=1000`);
    const answer = page.events.find((e: any) => e.name === "input:received");
    expect(answer.payload.requestId).toBe(requestId);
    expect(answer.payload.via).toBe("a2a");
  });
});
