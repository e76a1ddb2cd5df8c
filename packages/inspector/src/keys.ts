// The keys: what each does (the help dialog lists them) and which command a keydown is. Plain
// data and a plain function; the page runs the commands.

export const HELP: [string, string][] = [
  ["j / ↓", "step forward"],
  ["k / ↑", "step back"],
  ["PgDn / PgUp", "a screen forward / back"],
  ["Home / End", "start / end"],
  ["g", "go to a position"],
  ["/", "search event names"],
  ["n / N", "next / previous match"],
  ["c", "jump to the causing event"],
  ["f", "fork at the cursor"],
  ["l", "follow live"],
  ["x", "compact view: one row per agent call (j/k then step by row)"],
  ["o", "expand / collapse the agent call at the cursor"],
  ["i", "continue the session (input)"],
  ["t", "next view: state, chat, forks, compare"],
  ["e", "experiments"],
  ["?", "this help"],
];

export type Command =
  | { step: number }
  | { screen: 1 | -1 }
  | "start"
  | "end"
  | "goto"
  | "search"
  | "next-match"
  | "previous-match"
  | "cause"
  | "fork"
  | "follow"
  | "compact"
  | "group"
  | "input"
  | "tab"
  | "experiments"
  | "help";

const COMMANDS: Record<string, Command> = {
  j: { step: 1 },
  ArrowDown: { step: 1 },
  k: { step: -1 },
  ArrowUp: { step: -1 },
  PageDown: { screen: 1 },
  PageUp: { screen: -1 },
  Home: "start",
  End: "end",
  G: "end",
  g: "goto",
  "/": "search",
  n: "next-match",
  N: "previous-match",
  c: "cause",
  f: "fork",
  l: "follow",
  x: "compact",
  o: "group",
  i: "input",
  t: "tab",
  e: "experiments",
  "?": "help",
};

/** The command of a keydown; none while typing in a field or with Ctrl, Meta or Alt held. */
export function commandFor(event: { key: string; ctrlKey: boolean; metaKey: boolean; altKey: boolean }, typing: boolean): Command | null {
  if (typing || event.ctrlKey || event.metaKey || event.altKey) return null;
  return Object.prototype.hasOwnProperty.call(COMMANDS, event.key) ? COMMANDS[event.key]! : null;
}
