// Feedback's rules and the review queue's, without a page: the annotation a form's draft asks
// for, the turn at the cursor, online scores by turn, how an annotation says what it is about;
// the queue's address, the filter it lists with, and which session comes next.

import type { OnlineScore, SessionSummary } from "@openharness/client";
import { describe, expect, test } from "vitest";
import * as feedback from "../src/feedback";
import * as list from "../src/list";
import * as queue from "../src/queue";

const draft = (extra: Partial<feedback.Draft> = {}): feedback.Draft => ({ by: "ana", thumbs: null, labels: "", note: "", turn: null, ...extra });

describe("the annotation a draft asks for", () => {
  test("labels split at commas, trimmed, without empty ones or repeats", () => {
    expect(feedback.parseLabels(" wrong-city, rude,,wrong-city , ")).toEqual(["wrong-city", "rude"]);
    expect(feedback.parseLabels("")).toEqual([]);
  });

  test("only what is said: a thumb, labels, a note (trimmed), the turn", () => {
    expect(feedback.annotationOf(draft({ by: " ana@example.com ", thumbs: "down", labels: "a, b", note: " off by one \n", turn: 6 }))).toEqual({
      by: "ana@example.com",
      thumbs: "down",
      labels: ["a", "b"],
      note: "off by one",
      turn: 6,
    });
    expect(feedback.annotationOf(draft({ thumbs: "up" }))).toEqual({ by: "ana", thumbs: "up" });
  });

  test("refused before asking: nobody, nothing said, too much", () => {
    expect(feedback.annotationOf(draft({ by: " ", thumbs: "up" }))).toHaveProperty("error");
    expect(feedback.annotationOf(draft({ note: "   ", labels: " , " }))).toEqual({ error: "give a thumb, a label or a note" });
    expect(feedback.annotationOf(draft({ labels: Array.from({ length: 33 }, (_, i) => `l${i}`).join(",") }))).toEqual({ error: "at most 32 labels" });
    expect(feedback.annotationOf(draft({ labels: "x".repeat(65) }))).toHaveProperty("error");
    expect(feedback.annotationOf(draft({ note: "x".repeat(10_001) }))).toHaveProperty("error");
    expect(feedback.annotationOf(draft({ by: "x".repeat(201), thumbs: "up" }))).toHaveProperty("error");
    expect(feedback.annotationOf(draft({ labels: "x".repeat(64) }))).toEqual({ by: "ana", labels: ["x".repeat(64)] });
  });
});

describe("the turn at the cursor", () => {
  // Two turns: positions 1..3 end at 3 (its workflow:completed is seq 2), 4..6 at 6.
  const names = ["user:input", "assistant:replied", "workflow:completed", "user:input", "assistant:replied", "workflow:completed", "user:input"];
  const at = (seq: number) => (seq < names.length ? { name: names[seq]! } : undefined);

  test("ends with the first workflow:completed at or after the event at the cursor", () => {
    expect(feedback.turnAt(at, 0, 6)).toBe(3);
    expect(feedback.turnAt(at, 1, 6)).toBe(3);
    expect(feedback.turnAt(at, 3, 6)).toBe(3);
    expect(feedback.turnAt(at, 4, 6)).toBe(6);
    expect(feedback.turnAt(at, 6, 6)).toBe(6);
  });

  test("null while the turn runs, undefined while an event on the way is unread", () => {
    expect(feedback.turnAt(at, 7, 7)).toBeNull();
    expect(feedback.turnAt((seq) => (seq === 1 ? undefined : at(seq)), 1, 6)).toBeUndefined();
  });
});

describe("online scores and annotations as the panel says them", () => {
  const score = (scorer: string, turn: number, value: number | null, id: string): OnlineScore => ({
    id,
    at: "2026-01-01T09:00:00Z",
    scorer,
    turn,
    firstSeq: 0,
    value,
    passed: value === 1,
    better: "higher",
  });

  test("by turn, each scorer's latest, scorers by name", () => {
    const turns = feedback.scoresByTurn([score("polite", 6, 0, "a"), score("helpful", 3, 1, "b"), score("polite", 6, 1, "c"), score("helpful", 6, null, "d")]);
    expect(turns.map((t) => [t.turn, t.scores.map((s) => s.id)])).toEqual([
      [3, ["b"]],
      [6, ["d", "c"]],
    ]);
  });

  test("what an annotation is about, and its thumb", () => {
    expect(feedback.subjectOf({ turn: 6 })).toBe("turn ending at 6");
    expect(feedback.subjectOf({})).toBe("the session");
    expect(feedback.subjectOf({ run: { experiment: "wording", case: "c1", variant: "broken", repeat: 1 } })).toBe("the session · wording c1/broken #1");
    expect(feedback.thumbSign("up")).toBe("👍");
    expect(feedback.thumbSign("down")).toBe("👎");
    expect(feedback.thumbSign(null)).toBe("");
  });
});

describe("the review queue", () => {
  const session = (id: string, annotated = false): SessionSummary => ({
    id,
    agents: [],
    cost: 0,
    created: "2026-01-01T09:00:00Z",
    lastEvent: "2026-01-01T09:00:05Z",
    hosted: true,
    len: 3,
    openRequests: 0,
    parent: null,
    status: "idle",
    title: null,
    usage: { inputTokens: 0, outputTokens: 0, cacheCreationTokens: 0, cacheReadTokens: 0 },
    workflow: "chat",
    ...(annotated ? { annotations: { count: 1, up: 1, down: 0 } } : {}),
  });

  test("its address: the list's filter (never its annotated choice) and the session under review", () => {
    const filter = { ...list.initialFilter(), scorer: "helpful", sort: "lowestScore" as const, annotated: "yes" as const };
    expect(queue.queueAddress(filter)).toBe("#queue&sort=lowestScore&scorer=helpful");
    expect(queue.queueAddress(list.initialFilter(), "s 1", 4)).toBe("#queue&session=s%201&at=4");
    expect(queue.parseQueue("#queue&sort=lowestScore&scorer=helpful&annotated=yes&session=s1&at=4")).toEqual({ filter: { sort: "lowestScore", scorer: "helpful" } });
    expect(queue.parseQueue("#session=s1")).toBeNull();
    expect(queue.parseQueue("")).toBeNull();
  });

  test("lists the filter's sessions nobody annotated yet", () => {
    expect(queue.queueFilter({ ...list.initialFilter(), annotated: "yes", label: "x" })).toEqual({ ...list.initialFilter(), annotated: "no", label: "x" });
  });

  test("the next: the first listed neither annotated nor passed (annotated or skipped) in this review", () => {
    const rows = [session("a"), session("b", true), session("c"), session("d")];
    expect(queue.nextInQueue(rows, new Set())?.id).toBe("a");
    expect(queue.nextInQueue(rows, new Set(["a"]))?.id).toBe("c");
    expect(queue.nextInQueue(rows, new Set(["a", "c", "d"]))).toBeNull();
  });

  test("how many are left", () => {
    expect(queue.remaining(12, 0)).toBe("12 to review");
    expect(queue.remaining(12, 2)).toBe("12 to review (2 skipped)");
    expect(queue.remaining(0, 0)).toBe("Nothing left to review");
  });
});
