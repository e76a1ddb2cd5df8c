// A long chat session as `openharness export` writes it (JSONL: a begin line, one line per event
// with its seq, an end line with the count), for `openharness import`: `turns` turns of the
// `chat` workflow, each a user:input, the assistant's call (agent:started, `deltas` text:delta,
// assistant:replied, agent:completed) and workflow:completed. Deterministic: the same arguments
// give the same bytes (ids are UUID v7 from a fixed clock and a seeded generator).

import { JsonlWriter } from "../test/jsonl";

export interface Generated {
  session: string;
  events: number;
}

export async function generateChat(path: string, turns: number, deltas: number): Promise<Generated> {
  const out = new JsonlWriter(path, { clock: Date.UTC(2026, 0, 1, 9, 0, 0), seed: 0x2545f491 });
  const session = out.uuid();
  const lines = await out.begin(session);
  const event = (name: string, payload: unknown, causedBy: string | null): Promise<string> => lines.event(name, payload, causedBy);
  await event("workflow:started", { workflow: "chat" }, null);
  const usage = { cacheCreationTokens: 0, cacheReadTokens: 0, inputTokens: 12, outputTokens: deltas };
  for (let turn = 1; turn <= turns; turn++) {
    const text = `Message ${turn}: what about step ${turn}?`;
    const input = await event("user:input", { text }, null);
    await event("agent:started", { agentName: "assistant", prompt: `Answer the user's latest message.\nUser: ${text}` }, input);
    const words: string[] = [];
    for (let d = 0; d < deltas; d++) {
      const delta = `w${turn}.${d} `;
      words.push(delta);
      await event("text:delta", { delta, agentName: "assistant" }, input);
    }
    const reply = `Reply ${turn}: ${words.slice(0, 8).join("").trim()}`;
    await event("assistant:replied", { reply }, input);
    await event("agent:completed", { agentName: "assistant", outcome: "success", output: { reply }, usage }, input);
    await event("workflow:completed", { reason: "idle" }, null);
  }
  await lines.end();
  await out.close();
  return { session, events: lines.seq };
}
