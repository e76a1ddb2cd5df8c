// The session's events as the page saves them: the JSONL `openharness export` writes (a begin
// line, one line per event with its session and seq, an end line that counts them).

import type { Recorded } from "@openharness/client";
import { describe, expect, test } from "vitest";
import { exportJsonl } from "../src/panels/controls";

describe("download", () => {
  test("writes a begin line, the events with their session, and an end line with the count", () => {
    const events: Recorded[] = [
      { seq: 0, id: "e0", name: "workflow:started", payload: { workflow: "chat" }, timestamp: "2026-01-01T09:00:00Z", causedBy: null },
      { seq: 1, id: "e1", name: "user:input", payload: { text: "Hi" }, timestamp: "2026-01-01T09:00:01Z", causedBy: null },
    ];
    const lines = exportJsonl("s1", events).trimEnd().split("\n").map((line) => JSON.parse(line) as unknown);
    expect(lines).toEqual([
      { session: "s1", begin: true },
      { session: "s1", ...events[0] },
      { session: "s1", ...events[1] },
      { session: "s1", end: true, count: 2 },
    ]);
    expect(exportJsonl("s1", events).endsWith("}\n")).toBe(true);
  });
});
