// Many small sessions as `openharness export` writes them (JSONL: per session a begin line, one
// line per event with its seq, an end line with the count), for `openharness import`: a team's
// store for the session list's tests. Session `i` is one turn of `chat` (or, every third,
// `planner-executor`) asking about a city; every seventh ends waiting for an answer, every
// eleventh failed. Deterministic: ids are UUID v7 from a fixed clock and a seeded generator.

import { createWriteStream } from "node:fs";

export const CITIES = ["Lisbon", "Porto", "Seville", "Kyoto", "Oslo", "Lima", "Hanoi", "Tunis"];

export async function generateSessions(path: string, count: number): Promise<string[]> {
  let clock = Date.UTC(2026, 0, 1, 9, 0, 0);
  let seed = 0x9e3779b9;
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
  const out = createWriteStream(path);
  const write = (line: unknown): Promise<void> =>
    new Promise((resolve) => {
      if (out.write(JSON.stringify(line) + "\n")) resolve();
      else out.once("drain", () => resolve());
    });
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    clock += 60_000;
    const session = uuid();
    ids.push(session);
    let seq = 0;
    const event = async (name: string, payload: unknown, causedBy: string | null = null): Promise<string> => {
      clock += 1 + (i % 13) * 100;
      const id = uuid();
      await write({ session, seq, id, name, payload, timestamp: new Date(clock).toISOString().replace("Z", "000000Z"), causedBy });
      seq++;
      return id;
    };
    const city = CITIES[i % CITIES.length]!;
    const workflow = i % 3 === 0 ? "planner-executor" : "chat";
    const agent = workflow === "chat" ? "assistant" : "planner";
    await write({ session, begin: true });
    await event("workflow:started", { workflow });
    const input = await event("user:input", { text: `Plan a visit to ${city} for traveller ${i}` });
    await event("agent:started", { agentName: agent, prompt: `plan ${city}` }, input);
    const usage = { cacheCreationTokens: 0, cacheReadTokens: 0, inputTokens: 900 + (i % 97), outputTokens: 120 };
    await event("agent:completed", { agentName: agent, outcome: "success", usage, cost: 0.002 }, input);
    if (i % 7 === 0) {
      const asked = await event("input:requested", { prompt: "Book it?" });
      await event("workflow:completed", { reason: "waiting_for_input", openRequests: [asked] });
    } else if (i % 11 === 0) {
      await event("error:occurred", { code: "agent_failed", message: "the model gave up", recoverable: false });
      await event("workflow:completed", { reason: "idle", errors: 1 });
    } else {
      await event("workflow:completed", { reason: "idle" });
    }
    await write({ session, end: true, count: seq });
  }
  await new Promise<void>((resolve, reject) => out.end((error?: Error | null) => (error ? reject(error) : resolve())));
  return ids;
}
