// The page's patch follows the server's (the json-patch crate's `diff`) in the cases where
// JavaScript differs from it by default: key order, integer-like keys, keys beyond the BMP,
// removals from arrays (the index shifts), the root replaced. The browser tests compare both on
// every position of real sessions.

import { describe, expect, test } from "vitest";
import { diff, oldValues } from "../src/diff";

describe("diff", () => {
  test("objects: added keys in key order, then removed keys; nested values recursed", () => {
    expect(diff({ b: 1, z: { x: 1 }, gone: true }, { z: { x: 2 }, a: 1, b: 1 })).toEqual([
      { op: "add", path: "/a", value: 1 },
      { op: "replace", path: "/z/x", value: 2 },
      { op: "remove", path: "/gone" },
    ]);
  });

  test("keys sort as strings (as a BTreeMap's) and by code point beyond the BMP", () => {
    expect(diff({}, { "10": 1, "9": 2 }).map((op) => op.path)).toEqual(["/10", "/9"]);
    expect(diff({}, { "\u{1F600}": 1, "\uFFFD": 2 }).map((op) => op.path)).toEqual(["/\uFFFD", "/\u{1F600}"]);
  });

  test("arrays: index by index, each removal shifting the next index", () => {
    expect(diff([1, 2, 3], [1])).toEqual([
      { op: "remove", path: "/1" },
      { op: "remove", path: "/1" },
    ]);
    expect(diff([1], [1, { a: 1 }])).toEqual([{ op: "add", path: "/1", value: { a: 1 } }]);
  });

  test("a different kind of value replaces, the root included; pointers are escaped", () => {
    expect(diff({ title: "x" }, null)).toEqual([{ op: "replace", path: "", value: null }]);
    expect(diff({ "a/b": 1, "m~n": 1 }, { "a/b": 2, "m~n": 2 }).map((op) => op.path)).toEqual(["/a~1b", "/m~0n"]);
    expect(diff({ same: [1, { deep: true }] }, { same: [1, { deep: true }] })).toEqual([]);
  });
});

describe("old values", () => {
  test("each operation's replaced or removed value, in order (a removal shifts the next index)", () => {
    expect(oldValues({ s: "old" }, [{ op: "replace", path: "/s", value: "new" }])).toEqual(["old"]);
    expect(oldValues({ l: ["a", "b"] }, [{ op: "remove", path: "/l/0" }, { op: "remove", path: "/l/0" }])).toEqual(["a", "b"]);
    expect(oldValues({ "a/b": 1 }, [{ op: "remove", path: "/a~1b" }])).toEqual([1]);
    expect(oldValues({ x: 1 }, [{ op: "replace", path: "", value: 2 }])).toEqual([{ x: 1 }]);
    expect(oldValues({}, [{ op: "add", path: "/n", value: 1 }])).toEqual([undefined]);
  });
});
