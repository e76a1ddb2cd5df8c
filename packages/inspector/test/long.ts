// Long chat sessions as `openharness export` writes them, for `openharness import`: a session of
// `turns` turns of 50 events each (the start, the input, the agent's call with 44 text deltas,
// the complete text, the call's end, the turn's end), and, optionally, a fork of it made after
// its first turn whose own turns repeat the parent's except one near the end — so comparing the
// two reads nearly every event of both. Deterministic: ids are UUID v7 from a fixed clock and a
// seeded generator.

import { createWriteStream } from "node:fs";

/** Events per turn. */
export const TURN = 50;

export interface LongSessions {
  parent: string;
  fork: string | null;
  /** The parent's length. */
  len: number;
}

export async function generateLong(path: string, turns: number, options: { fork?: { differsAt: number }; seed?: number } = {}): Promise<LongSessions> {
  let clock = Date.UTC(2026, 5, 1, 9, 0, 0);
  let seed = options.seed ?? 0x2545f491;
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

  const session = async (id: string, first: (() => Promise<void>) | null, from: number, to: number, input: (turn: number) => string): Promise<number> => {
    let seq = 0;
    const event = async (name: string, payload: unknown, causedBy: string | null = null): Promise<string> => {
      clock += 3;
      const eventId = uuid();
      await write({ session: id, seq, id: eventId, name, payload, timestamp: new Date(clock).toISOString().replace("Z", "000000Z"), causedBy });
      seq++;
      return eventId;
    };
    await write({ session: id, begin: true });
    if (first) {
      await first();
      seq++;
    }
    for (let turn = from; turn < to; turn++) {
      await event("workflow:started", { workflow: "chat" });
      const text = input(turn);
      const asked = await event("user:input", { text });
      await event("agent:started", { agentName: "assistant", prompt: text }, asked);
      const words: string[] = [];
      for (let i = 0; i < TURN - 6; i++) {
        const word = `w${turn}.${i} `;
        words.push(word);
        await event("text:delta", { agentName: "assistant", delta: word }, asked);
      }
      await event("text:complete", { agentName: "assistant", fullText: words.join("") }, asked);
      const usage = { cacheCreationTokens: 0, cacheReadTokens: 0, inputTokens: 400 + turn, outputTokens: TURN - 6 };
      await event("agent:completed", { agentName: "assistant", outcome: "success", usage, cost: 0.001 }, asked);
      await event("workflow:completed", { reason: "idle" });
    }
    await write({ session: id, end: true, count: seq });
    return seq;
  };

  clock += 1;
  const parent = uuid();
  const len = await session(parent, null, 0, turns, (turn) => `question ${turn}`);
  let fork: string | null = null;
  if (options.fork) {
    const differsAt = options.fork.differsAt;
    clock += 1;
    const id = uuid();
    fork = id;
    const forked = async (): Promise<void> => {
      clock += 3;
      await write({ session: id, seq: 0, id: uuid(), name: "session:forked", payload: { parentSessionId: parent, forkIndex: TURN }, timestamp: new Date(clock).toISOString().replace("Z", "000000Z"), causedBy: null });
    };
    await session(id, forked, 1, turns, (turn) => (turn === differsAt ? `another question ${turn}` : `question ${turn}`));
  }
  await new Promise<void>((resolve, reject) => out.end((error?: Error | null) => (error ? reject(error) : resolve())));
  return { parent, fork, len };
}
