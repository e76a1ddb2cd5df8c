// A long chat session as `openharness export` writes it (JSONL: a begin line, one line per event
// with its seq, an end line with the count), for `openharness import`: `turns` turns of the
// `chat` workflow, each a user:input, the assistant's call (agent:started, `deltas` text:delta,
// assistant:replied, agent:completed) and workflow:completed. Deterministic: the same arguments
// give the same bytes (ids are UUID v7 from a fixed clock and a seeded generator).

import { createWriteStream } from "node:fs";

export interface Generated {
  session: string;
  events: number;
}

export async function generateChat(path: string, turns: number, deltas: number): Promise<Generated> {
  let clock = Date.UTC(2026, 0, 1, 9, 0, 0);
  let seed = 0x2545f491;
  const random = (): number => {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return seed >>> 0;
  };
  const hex = (value: number, digits: number): string => value.toString(16).padStart(digits, "0").slice(-digits);
  const uuid = (): string => {
    const ms = hex(clock, 12);
    return `${ms.slice(0, 8)}-${ms.slice(8)}-7${hex(random(), 3)}-${hex(0x8000 | (random() & 0x3fff), 4)}-${hex(random(), 8)}${hex(random(), 4)}`;
  };
  const session = uuid();
  const out = createWriteStream(path);
  const write = (line: unknown): Promise<void> =>
    new Promise((resolve) => {
      if (out.write(JSON.stringify(line) + "\n")) resolve();
      else out.once("drain", () => resolve());
    });
  let seq = 0;
  const event = async (name: string, payload: unknown, causedBy: string | null): Promise<string> => {
    clock += 1;
    const id = uuid();
    await write({ session, seq, id, name, payload, timestamp: new Date(clock).toISOString().replace("Z", "000000Z"), causedBy });
    seq++;
    return id;
  };
  await write({ session, begin: true });
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
  await write({ session, end: true, count: seq });
  await new Promise<void>((resolve, reject) => out.end((error?: Error | null) => (error ? reject(error) : resolve())));
  return { session, events: seq };
}
