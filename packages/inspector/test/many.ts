// Many small sessions as `openharness export` writes them (JSONL: per session a begin line, one
// line per event with its seq, an end line with the count), for `openharness import`: a team's
// store for the session list's tests. Session `i` is one turn of `chat` (or, every third,
// `planner-executor`) asking about a city; every seventh ends waiting for an answer, every
// eleventh failed. Deterministic: ids are UUID v7 from a fixed clock and a seeded generator.

import { JsonlWriter } from "./jsonl";

export const CITIES = ["Lisbon", "Porto", "Seville", "Kyoto", "Oslo", "Lima", "Hanoi", "Tunis"];

export async function generateSessions(path: string, count: number): Promise<string[]> {
  const out = new JsonlWriter(path, { clock: Date.UTC(2026, 0, 1, 9, 0, 0), seed: 0x9e3779b9 });
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    out.clock += 60_000;
    const session = out.uuid();
    ids.push(session);
    const lines = await out.begin(session);
    const step = 1 + (i % 13) * 100;
    const event = (name: string, payload: unknown, causedBy: string | null = null): Promise<string> => lines.event(name, payload, causedBy, step);
    const city = CITIES[i % CITIES.length]!;
    const workflow = i % 3 === 0 ? "planner-executor" : "chat";
    const agent = workflow === "chat" ? "assistant" : "planner";
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
    await lines.end();
  }
  await out.close();
  return ids;
}
