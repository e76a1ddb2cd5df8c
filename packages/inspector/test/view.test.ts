// The view state's rules, without a page: moving the cursor (clamped, its direction, leaving
// the end stops following), the next and previous match (wrapping), the matches on screen, the
// compact view's rows, the address, links that stay on the page under any mount prefix, the
// client's base from the page's, and the live follow's state as the page shows it.

import { describe, expect, test } from "vitest";
import * as view from "../src/view";

describe("the cursor", () => {
  test("moves clamped to 0..len, says which way it went, and stops following off the end", () => {
    const following = { ...view.initialView(), session: "s", position: 10, following: true };
    expect(view.moveTo(following, 12, 10)).toMatchObject({ position: 10, direction: 1, following: true });
    expect(view.moveTo(following, 4, 10)).toMatchObject({ position: 4, direction: -1, following: false });
    expect(view.moveTo(following, -3, 10)).toMatchObject({ position: 0, direction: -1 });
    // A move returns a new view; the old one is unchanged.
    expect(following.position).toBe(10);
  });
});

describe("search", () => {
  test("the next and previous match wrap around; matches are seqs, shown at seq + 1", () => {
    const matches = [2, 5, 9];
    expect(view.nextMatch(matches, 0, 1)).toBe(3);
    expect(view.nextMatch(matches, 3, 1)).toBe(6);
    expect(view.nextMatch(matches, 10, 1)).toBe(3);
    expect(view.nextMatch(matches, 6, -1)).toBe(3);
    expect(view.nextMatch(matches, 3, -1)).toBe(10);
    expect(view.nextMatch([], 3, 1)).toBeNull();
  });

  test("the matches on screen are those between its first and last positions", () => {
    expect([...view.matchesBetween([1, 4, 8, 20], 4, 10)]).toEqual([4, 8]);
    expect([...view.matchesBetween([1, 4, 8, 20], 30, 40)]).toEqual([]);
  });
});

describe("the compact view", () => {
  // 0: outside any call; 1..4: a call started at 1; 5: outside.
  const groups = [-1, 1, 1, 1, 1, -1];
  const groupAt = (seq: number) => groups[seq] ?? null;

  test("a collapsed call shows its agent:started only; an expanded one all its events", () => {
    expect([...view.compactRows(6, groupAt, new Set())]).toEqual([0, 1, 2, 6]);
    expect([...view.compactRows(6, groupAt, new Set([1]))]).toEqual([0, 1, 2, 3, 4, 5, 6]);
    // Events not grouped yet all show.
    expect([...view.compactRows(3, () => null, new Set())]).toEqual([0, 1, 2, 3]);
  });

  test("a position inside a collapsed call is on its call's row", () => {
    const rows = view.compactRows(6, groupAt, new Set());
    expect([0, 1, 2, 3, 4, 5, 6].map((p) => view.rowOf(rows, p))).toEqual([0, 1, 2, 2, 2, 2, 3]);
  });
});

describe("addresses and the mount prefix", () => {
  test("the address names the session and position; a bad position is ignored", () => {
    expect(view.addressOf("a b", 3)).toBe("#session=a%20b&at=3");
    expect(view.parseAddress(view.addressOf("a b", 3))).toEqual({ session: "a b", at: 3 });
    expect(view.parseAddress("#session=s")).toEqual({ session: "s", at: null });
    expect(view.parseAddress("#session=s&at=x")).toEqual({ session: "s", at: null });
    expect(view.parseAddress("#at=3")).toBeNull();
  });

  test("links keep the page's own path, whatever its <base>", () => {
    expect(view.linkTo({ pathname: "/harness", search: "" }, "#session=s")).toBe("/harness#session=s");
    expect(view.linkTo({ pathname: "/harness/", search: "?k=1" }, "#session=s")).toBe("/harness/?k=1#session=s");
  });

  test("the client's base is the directory the page is served from", () => {
    expect(view.mountBase("http://127.0.0.1:8080/")).toBe("http://127.0.0.1:8080");
    expect(view.mountBase("http://127.0.0.1:8080/harness/")).toBe("http://127.0.0.1:8080/harness");
    expect(view.mountBase("http://127.0.0.1:8080/harness/index.html")).toBe("http://127.0.0.1:8080/harness");
    expect(view.mountBase("http://127.0.0.1:8080/a/b/#session=s")).toBe("http://127.0.0.1:8080/a/b");
  });
});

test("the live follow's state as the page shows it", () => {
  expect(["connecting", "open", "reconnecting", "closed", "gave-up"].map((s) => view.liveStatus(s as never))).toEqual([
    "connecting",
    "live",
    "retrying",
    "stopped",
    "stopped",
  ]);
});
