// How the timeline groups events per agent call, on hand-made logs (no server): an agent call is
// its agent:started, the events caused by the event that activated the agent, or naming the
// agent, while the call is open, and its agent:completed.

import { describe, expect, test } from "vitest";
import { OpenHarnessClient, type Recorded } from "@openharness/client";
import { Tape } from "../src/tape";

function tape(events: [name: string, payload: unknown, causedBy: string | null][]): Tape {
  const t = new Tape(new OpenHarnessClient({ baseUrl: "http://127.0.0.1" }), "s", 0);
  events.forEach(([name, payload, causedBy], seq) => {
    const event: Recorded = { seq, id: `e${seq}`, name, payload: payload as Recorded["payload"], timestamp: "2026-01-01T00:00:00Z", causedBy };
    t.append(event);
  });
  return t;
}

const groups = (t: Tape): (number | null)[] => Array.from({ length: t.len }, (_, seq) => t.groupAt(seq));

describe("agent-call groups", () => {
  test("a call holds what its trigger caused and what names its agent, until it completes", () => {
    const t = tape([
      ["workflow:started", {}, null], // 0
      ["user:input", { text: "hi" }, null], // 1
      ["agent:started", { agentName: "a" }, "e1"], // 2
      ["text:delta", { delta: "x", agentName: "a" }, null], // 3
      ["plan:created", {}, "e1"], // 4
      ["agent:completed", { agentName: "a", outcome: "success" }, "e1"], // 5
      ["task:started", {}, "e4"], // 6: caused by the plan, not the trigger
      ["workflow:completed", {}, null], // 7
    ]);
    expect(groups(t)).toEqual([-1, -1, 2, 2, 2, 2, -1, -1]);
    expect(t.groups.get(2)).toMatchObject({ agent: "a", end: 5, outcome: "success", count: 4 });
    expect(t.effects("e1")).toEqual([2, 4, 5]);
  });

  test("concurrent calls keep their own events, by trigger and by agent name", () => {
    const t = tape([
      ["task:started", {}, null], // 0
      ["task:started", {}, null], // 1
      ["agent:started", { agentName: "exec" }, "e0"], // 2
      ["agent:started", { agentName: "exec" }, "e1"], // 3
      ["task:completed", {}, "e1"], // 4
      ["agent:started", { agentName: "critic" }, "e0"], // 5
      ["text:delta", { agentName: "critic" }, null], // 6
      ["agent:completed", { agentName: "exec", outcome: "failure" }, "e1"], // 7
      ["task:completed", {}, "e0"], // 8: critic opened last on the same trigger
      ["agent:completed", { agentName: "exec", outcome: "success" }, "e0"], // 9
      ["agent:completed", { agentName: "critic", outcome: "success" }, "e0"], // 10
      ["note:added", {}, "e0"], // 11: every call on e0 has ended
    ]);
    expect(groups(t)).toEqual([-1, -1, 2, 3, 3, 5, 5, 3, 5, 2, 5, -1]);
    expect(t.groups.get(3)).toMatchObject({ end: 7, outcome: "failure" });
    expect(t.groups.get(2)).toMatchObject({ end: 9, outcome: "success" });
  });

  test("events not read yet have no group, and search covers what was read", () => {
    const t = tape([["user:input", {}, null], ["agent:started", { agentName: "a" }, "e0"]]);
    expect(t.groupAt(5)).toBeNull();
    expect(t.search("AGENT")).toEqual([1]);
    expect(t.search("  ")).toEqual([]);
  });
});
