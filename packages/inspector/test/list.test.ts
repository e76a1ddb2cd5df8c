// The session list's rules, without a page: the query a filter asks for (scores, annotations and
// labels included), the filter as an address says it, how a refresh and a next page merge with
// the rows read before, and how a row says durations, times, tokens, cost, scores and thumbs.

import type { SessionSummary } from "@openharness/client";
import { describe, expect, test } from "vitest";
import * as list from "../src/list";

function session(id: string, extra: Partial<SessionSummary> = {}): SessionSummary {
  return {
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
    ...extra,
  };
}

describe("the query", () => {
  test("sends only what the filter sets: the first page of 100, most recently active first", () => {
    expect(list.queryOf(list.initialFilter())).toEqual({ limit: 100 });
  });

  test("trims the search, names one status and one workflow, and the sort unless it is the default", () => {
    const filter = { ...list.initialFilter(), search: "  Lisbon ", status: "waiting" as const, workflow: "chat", sort: "cost" as const };
    expect(list.queryOf(filter)).toEqual({ limit: 100, search: "Lisbon", status: ["waiting"], workflow: "chat", sort: "cost" });
    expect(list.queryOf({ ...filter, search: "   " })).not.toHaveProperty("search");
  });

  test("asks for the page after a cursor, and for at most 1000 and at least 1", () => {
    expect(list.queryOf(list.initialFilter(), "c1")).toEqual({ limit: 100, after: "c1" });
    expect(list.queryOf(list.initialFilter(), null, 5000).limit).toBe(1000);
    expect(list.queryOf(list.initialFilter(), null, 0).limit).toBe(1);
  });
});

describe("scores and annotations in the query", () => {
  const scored = { ...list.initialFilter(), scorer: " helpful ", minScore: "0.25", maxScore: "0.9", sort: "lowestScore" as const };

  test("a scorer with its bounds and a score sort", () => {
    expect(list.queryOf(scored)).toEqual({ limit: 100, scorer: "helpful", minScore: 0.25, maxScore: 0.9, sort: "lowestScore" });
  });

  test("no bound, and no score sort, without a scorer (the server would refuse them)", () => {
    expect(list.queryOf({ ...scored, scorer: "  " })).toEqual({ limit: 100 });
    expect(list.queryOf({ ...list.initialFilter(), sort: "score" })).toEqual({ limit: 100 });
  });

  test("a bound that is no number is left out; 0 is a bound", () => {
    expect(list.queryOf({ ...scored, minScore: "abc", maxScore: "0" })).toEqual({ limit: 100, scorer: "helpful", maxScore: 0, sort: "lowestScore" });
    expect(list.scoreBound("")).toBeUndefined();
    expect(list.scoreBound(" 1e-1 ")).toBe(0.1);
    expect(list.scoreBound("Infinity")).toBeUndefined();
  });

  test("annotated or not, and a label, trimmed", () => {
    expect(list.queryOf({ ...list.initialFilter(), annotated: "no", label: " wrong-city " })).toEqual({ limit: 100, annotated: false, label: "wrong-city" });
    expect(list.queryOf({ ...list.initialFilter(), annotated: "yes" })).toEqual({ limit: 100, annotated: true });
  });
});

describe("the filter in an address", () => {
  test("only what is set, and read back the same", () => {
    const filter = { ...list.initialFilter(), scorer: "helpful", sort: "lowestScore" as const, minScore: "0.5", status: "idle" as const, label: "a b&c" };
    const params = list.filterParams(filter);
    expect(params.toString()).toBe("status=idle&sort=lowestScore&scorer=helpful&minScore=0.5&label=a+b%26c");
    expect({ ...list.initialFilter(), ...list.filterFromParams(new URLSearchParams(params.toString())) }).toEqual(filter);
    expect(list.filterParams(list.initialFilter()).toString()).toBe("");
  });

  test("unknown values and parameters are left out", () => {
    expect(list.filterFromParams(new URLSearchParams("sort=best&status=sleeping&annotated=maybe&session=x&search=Lisbon"))).toEqual({ search: "Lisbon" });
  });

  test("the same filter", () => {
    expect(list.sameFilter(list.initialFilter(), list.initialFilter())).toBe(true);
    expect(list.sameFilter(list.initialFilter(), { ...list.initialFilter(), label: "x" })).toBe(false);
  });
});

describe("pages", () => {
  const ids = (sessions: SessionSummary[]): string[] => sessions.map((s) => s.id);

  test("a refresh replaces the rows it covers and keeps those beyond, none twice", () => {
    const shown = ["a", "b", "c", "d"].map((id) => session(id));
    // "d" ran and moved up to the first page.
    const fresh = [session("d", { status: "running" }), session("a")];
    const merged = list.mergeRefresh(shown, fresh, 2);
    expect(ids(merged)).toEqual(["d", "a", "c"]);
    expect(merged[0]!.status).toBe("running");
  });

  test("a next page is appended without the sessions already listed", () => {
    expect(ids(list.appendPage([session("a"), session("b")], [session("b"), session("c")]))).toEqual(["a", "b", "c"]);
  });

  test("the list is polled often while a listed session runs", () => {
    expect(list.anyRunning([session("a"), session("b", { status: "running" })])).toBe(true);
    expect(list.anyRunning([session("a", { status: "waiting" })])).toBe(false);
  });
});

describe("a row's figures", () => {
  test("durations", () => {
    expect(list.formatDuration(850)).toBe("850 ms");
    expect(list.formatDuration(12_400)).toBe("12 s");
    expect(list.formatDuration(185_000)).toBe("3 m 05 s");
    expect(list.formatDuration(2 * 3600_000 + 4 * 60_000)).toBe("2 h 04 m");
    expect(list.formatDuration(3 * 86_400_000 + 2 * 3600_000)).toBe("3 d 2 h");
    expect(list.formatDuration(-1)).toBe("–");
    expect(list.durationOf(session("a"))).toBe(5000);
  });

  test("how long ago", () => {
    const now = Date.parse("2026-01-01T12:00:00Z");
    expect(list.formatAgo("2026-01-01T11:59:59.500Z", now)).toBe("just now");
    expect(list.formatAgo("2026-01-01T11:59:30Z", now)).toBe("30 s ago");
    expect(list.formatAgo("2026-01-01T11:45:00Z", now)).toBe("15 min ago");
    expect(list.formatAgo("2026-01-01T09:00:00Z", now)).toBe("3 h ago");
    expect(list.formatAgo("2025-12-25T12:00:00Z", now)).toBe("7 d ago");
    expect(list.formatAgo("not a time", now)).toBe("?");
  });

  test("scores and annotations", () => {
    expect(list.formatScore(1)).toBe("1");
    expect(list.formatScore(0.8249)).toBe("0.82");
    expect(list.formatScore(0.5)).toBe("0.5");
    expect(list.formatScore(1234.56)).toBe("1235");
    expect(list.formatScore(Number.NaN)).toBe("–");
    expect(list.scoresOf(session("a", { scores: { tokens: 120, helpful: 0.5 } }))).toEqual([["helpful", 0.5], ["tokens", 120]]);
    expect(list.scoresOf(session("a"))).toEqual([]);
    expect(list.formatThumbs({ count: 3, up: 2, down: 1, labels: [] })).toBe("👍 2 👎 1");
    expect(list.formatThumbs({ count: 1, up: 0, down: 0 })).toBe("1 annotation");
    const scorers = new Set<string>(["old"]);
    const labels = new Set<string>();
    list.seenFeedback([session("a", { scores: { helpful: 1 }, annotations: { count: 1, up: 1, down: 0, labels: ["x", "y"] } }), session("b", { annotations: null })], scorers, labels);
    expect([...scorers]).toEqual(["old", "helpful"]);
    expect([...labels]).toEqual(["x", "y"]);
  });

  test("tokens and cost", () => {
    expect(list.formatTokens(950)).toBe("950");
    expect(list.formatTokens(1234)).toBe("1.2k");
    expect(list.formatTokens(45_678)).toBe("46k");
    expect(list.formatTokens(4_100_000)).toBe("4.1M");
    expect(list.tokensOf(session("a", { usage: { inputTokens: 900, outputTokens: 120, cacheCreationTokens: 5, cacheReadTokens: 7 } }))).toBe(1020);
    expect(list.formatCost(0)).toBe("$0");
    expect(list.formatCost(0.0021)).toBe("$0.0021");
    expect(list.formatCost(1.5)).toBe("$1.50");
  });
});
