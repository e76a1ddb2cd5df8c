// Which command a keydown is: the keys of the help, none while typing or with a modifier held.

import { expect, test } from "vitest";
import { HELP, commandFor } from "../src/keys";

const key = (k: string, mods: Partial<{ ctrlKey: boolean; metaKey: boolean; altKey: boolean }> = {}) =>
  commandFor({ key: k, ctrlKey: false, metaKey: false, altKey: false, ...mods }, false);

test("the keys of the help are commands", () => {
  expect([key("j"), key("ArrowDown"), key("k"), key("ArrowUp")]).toEqual([{ step: 1 }, { step: 1 }, { step: -1 }, { step: -1 }]);
  expect([key("PageDown"), key("PageUp")]).toEqual([{ screen: 1 }, { screen: -1 }]);
  expect([key("Home"), key("End"), key("G"), key("g")]).toEqual(["start", "end", "end", "goto"]);
  expect([key("/"), key("n"), key("N"), key("c"), key("f"), key("l"), key("x"), key("o"), key("i"), key("t"), key("e"), key("?")]).toEqual([
    "search",
    "next-match",
    "previous-match",
    "cause",
    "fork",
    "follow",
    "compact",
    "group",
    "input",
    "tab",
    "experiments",
    "help",
  ]);
  expect(HELP.length).toBe(16);
});

test("no command while typing, with a modifier, or for other keys", () => {
  expect(commandFor({ key: "j", ctrlKey: false, metaKey: false, altKey: false }, true)).toBeNull();
  expect(key("j", { ctrlKey: true })).toBeNull();
  expect(key("f", { metaKey: true })).toBeNull();
  expect(key("l", { altKey: true })).toBeNull();
  expect(key("q")).toBeNull();
  expect(key("toString")).toBeNull();
});
