// Long chat sessions as `openharness export` writes them, for `openharness import`: a session of
// `turns` turns of 50 events each (the start, the input, the agent's call with 44 text deltas,
// the complete text, the call's end, the turn's end), and, optionally, a fork of it made after
// its first turn whose own turns repeat the parent's except one near the end — so comparing the
// two reads nearly every event of both. Deterministic (see `JsonlWriter`).

import { JsonlWriter, type SessionLines } from "./jsonl";

/** Events per turn. */
export const TURN = 50;

export interface LongSessions {
  parent: string;
  fork: string | null;
  /** The parent's length. */
  len: number;
}

export async function generateLong(path: string, turns: number, options: { fork?: { differsAt: number }; seed?: number } = {}): Promise<LongSessions> {
  const out = new JsonlWriter(path, { clock: Date.UTC(2026, 5, 1, 9, 0, 0), seed: options.seed ?? 0x2545f491 });
  const play = async (lines: SessionLines, from: number, to: number, input: (turn: number) => string): Promise<void> => {
    for (let turn = from; turn < to; turn++) {
      await lines.event("workflow:started", { workflow: "chat" }, null, 3);
      const text = input(turn);
      const asked = await lines.event("user:input", { text }, null, 3);
      await lines.event("agent:started", { agentName: "assistant", prompt: text }, asked, 3);
      const words: string[] = [];
      for (let i = 0; i < TURN - 6; i++) {
        const word = `w${turn}.${i} `;
        words.push(word);
        await lines.event("text:delta", { agentName: "assistant", delta: word }, asked, 3);
      }
      await lines.event("text:complete", { agentName: "assistant", fullText: words.join("") }, asked, 3);
      const usage = { cacheCreationTokens: 0, cacheReadTokens: 0, inputTokens: 400 + turn, outputTokens: TURN - 6 };
      await lines.event("agent:completed", { agentName: "assistant", outcome: "success", usage, cost: 0.001 }, asked, 3);
      await lines.event("workflow:completed", { reason: "idle" }, null, 3);
    }
    await lines.end();
  };

  out.clock += 1;
  const parent = out.uuid();
  const parentLines = await out.begin(parent);
  await play(parentLines, 0, turns, (turn) => `question ${turn}`);
  let fork: string | null = null;
  if (options.fork) {
    const differsAt = options.fork.differsAt;
    out.clock += 1;
    fork = out.uuid();
    const forkLines = await out.begin(fork);
    await forkLines.event("session:forked", { parentSessionId: parent, forkIndex: TURN }, null, 3);
    await play(forkLines, 1, turns, (turn) => (turn === differsAt ? `another question ${turn}` : `question ${turn}`));
  }
  await out.close();
  return { parent, fork, len: parentLines.seq };
}
