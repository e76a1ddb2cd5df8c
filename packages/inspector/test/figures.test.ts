// The per-call figures (duration or elapsed time, tokens, cost) and the fork form's reading of
// what it is asked, without a browser.

import { describe, expect, test } from "vitest";
import { forkChange } from "../src/panels/views";
import { type Group, callFigures, formatDuration } from "../src/tape";

function call(change: Partial<Group>): Group {
  return {
    start: 3,
    agent: "planner",
    trigger: null,
    end: null,
    outcome: null,
    count: 1,
    startedAt: "2026-11-27T10:00:00.000Z",
    endedAt: null,
    tokens: null,
    cost: null,
    ...change,
  };
}

describe("a call's figures", () => {
  test("durations read as people read them", () => {
    expect([formatDuration(0), formatDuration(840.4), formatDuration(12_340), formatDuration(245_000)]).toEqual(["0 ms", "840 ms", "12.3 s", "4 min 05 s"]);
  });

  test("a finished call: its duration, tokens and cost", () => {
    const done = call({ endedAt: "2026-11-27T10:00:01.500Z", tokens: { input: 1200, output: 85 }, cost: 0.0042 });
    expect(callFigures(done, null)).toBe("1.5 s · 1,200 in / 85 out tok · $0.0042");
    expect(callFigures({ ...done, cost: 1.5 }, null)).toBe("1.5 s · 1,200 in / 85 out tok · $1.50");
  });

  test("a running call: the time since it started, never negative; an open call of an idle session: nothing", () => {
    const open = call({});
    expect(callFigures(open, Date.parse("2026-11-27T10:00:03.250Z"))).toBe("running 3.3 s");
    expect(callFigures(open, Date.parse("2026-11-27T09:59:59.000Z"))).toBe("running 0 ms");
    expect(callFigures(open, null)).toBe("");
  });
});

describe("the fork form", () => {
  test("blank fields ask for no change; an input and a merge patch are passed on", () => {
    expect(forkChange("  ", "")).toEqual({});
    expect(forkChange("Goodbye", '{"plan": null}')).toEqual({ input: "Goodbye", stateEdit: { plan: null } });
    expect(forkChange("", "", "haiku")).toEqual({ provider: "haiku" });
    expect(forkChange("", "", "", "no")).toEqual({ answer: "no" });
    expect(forkChange("", "", "", "   ")).toEqual({});
  });

  test("a state edit that is not a JSON object is refused with the reason", () => {
    expect(() => forkChange("", "{plan")).toThrow(/the state edit is not JSON/);
    expect(() => forkChange("", "[1]")).toThrow(/a JSON merge patch: an object/);
    expect(() => forkChange("", "null")).toThrow(/a JSON merge patch: an object/);
  });
});
