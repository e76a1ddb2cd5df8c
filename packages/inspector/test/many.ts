// Many small sessions as `openharness export` writes them (JSONL: per session a begin line, one
// line per event with its seq, an end line with the count), for `openharness import`: a team's
// store for the session list's tests. Session `i` is one turn of `chat` (or, every third,
// `planner-executor`) asking about a city; every seventh ends waiting for an answer, every
// eleventh failed. Deterministic: ids are UUID v7 from a fixed clock and a seeded generator.
// `feedback` gives a session what was said of it: online scores of its turn and a person's
// annotation, written on its feedback log (`feedback:<id>`, as the server keeps them) after
// all the sessions, which are the same with feedback or without.

import { JsonlWriter } from "./jsonl";

export const CITIES = ["Lisbon", "Porto", "Seville", "Kyoto", "Oslo", "Lima", "Hanoi", "Tunis"];

/** What was said of a generated session. */
export interface SessionFeedback {
  /** Online scores of its turn, by scorer (passed from 0.5). */
  scores?: Record<string, number>;
  /** A person's annotation of it. */
  annotation?: { by: string; thumbs?: "up" | "down"; labels?: string[]; note?: string };
}

export async function generateSessions(path: string, count: number, feedback?: (i: number) => SessionFeedback | null): Promise<string[]> {
  const out = new JsonlWriter(path, { clock: Date.UTC(2026, 0, 1, 9, 0, 0), seed: 0x9e3779b9 });
  const ids: string[] = [];
  const lens: number[] = [];
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
    lens.push(lines.seq);
  }
  // After every session, so the sessions are the same with feedback or without.
  for (let i = 0; feedback && i < count; i++) {
    const said = feedback(i);
    if (!said) continue;
    const log = await out.begin(`feedback:${ids[i]}`);
    for (const [scorer, value] of Object.entries(said.scores ?? {})) {
      await log.event("eval:scored", { scorer, turn: lens[i], firstSeq: 0, value, passed: value >= 0.5, better: "higher" }, null, 40);
    }
    if (said.annotation) await log.event("annotation:added", said.annotation, null, 1000);
    await log.end();
  }
  await out.close();
  return ids;
}
