// The controls that change the server's sessions: fork at the cursor, continue a session — a
// new turn, or, when it waits, the answer to its open input request (whose question is shown) —
// and cancel its running turn. (The session's download is the server's export:
// `OpenHarnessClient.exportJsonl`.)

import type { Accepted, OpenHarnessClient, SessionDetail } from "@openharness/client";
import type { Tape } from "../tape";

/** How far back from the end the open request is looked for. */
const PAGE_BACK = 2000;

/** A fork of the tape's session at `position` (the fork runs on in the server). */
export function forkAt(client: OpenHarnessClient, tape: Tape, position: number): Promise<Accepted> {
  return client.fork(tape.session, { at: "position", position });
}

/** Sends `text`: the answer to the open `input:requested` of a waiting session, else a new turn. */
export async function continueSession(client: OpenHarnessClient, summary: SessionDetail, tape: Tape, text: string): Promise<Accepted> {
  if (summary.status === "waiting") {
    const request = await openRequest(tape);
    if (request) return client.answer(tape.session, request, text);
  }
  return client.sendInput(tape.session, text);
}

/** The open `input:requested` of a waiting session: the last turn's `workflow:completed` names it. */
export async function openRequest(tape: Tape): Promise<string | null> {
  await tape.ensure(tape.len - 1, tape.len);
  for (let seq = tape.len - 1; seq >= Math.max(0, tape.len - PAGE_BACK); seq--) {
    const event = tape.events[seq];
    if (!event) await tape.ensure(seq, seq + 1);
    const payload = tape.events[seq]?.payload as { openRequests?: unknown } | undefined;
    if (tape.events[seq]?.name === "workflow:completed" && Array.isArray(payload?.openRequests)) {
      const open = payload.openRequests.filter((id): id is string => typeof id === "string");
      return open[open.length - 1] ?? null;
    }
  }
  return null;
}

/** The question of a waiting session's open `input:requested` (its `prompt`), if any. */
export async function openQuestion(tape: Tape): Promise<string | null> {
  const request = await openRequest(tape);
  if (!request) return null;
  const seq = await tape.seqOf(request, tape.len);
  if (seq === null) return null;
  await tape.ensure(seq, seq + 1);
  const prompt = (tape.events[seq]?.payload as { prompt?: unknown } | undefined)?.prompt;
  return typeof prompt === "string" ? prompt : null;
}
