// Feedback's rules, without a page: the annotation a form's draft asks to record (labels split
// and cleaned, the turn or the whole session), the turn the cursor is in (the position where
// it ended), online scores grouped by turn, and how an annotation says who, when and what.

import type { Annotation, AnnotationAdded, OnlineScore, Recorded } from "@openharness/client";

/** The server's limits on an annotation. */
export const MAX_LABELS = 32;
export const MAX_LABEL_CHARS = 64;
export const MAX_NOTE_CHARS = 10_000;
export const MAX_BY_CHARS = 200;

/** What the annotation form holds. */
export interface Draft {
  by: string;
  thumbs: "up" | "down" | null;
  /** Labels as typed: separated by commas. */
  labels: string;
  note: string;
  /** The turn annotated (the position where it ended), or null for the whole session. */
  turn: number | null;
}

/** Labels as typed, split at commas, trimmed, empty ones and repeats left out. */
export function parseLabels(text: string): string[] {
  const out: string[] = [];
  for (const label of text.split(",").map((l) => l.trim())) if (label !== "" && !out.includes(label)) out.push(label);
  return out;
}

/**
 * The annotation `draft` asks to record, or why it cannot be (the server's own checks, said
 * before asking it): someone, and at least a thumb, a label or a note.
 */
export function annotationOf(draft: Draft): AnnotationAdded | { error: string } {
  const by = draft.by.trim();
  if (by === "") return { error: "say who you are first" };
  if ([...by].length > MAX_BY_CHARS) return { error: `a name of at most ${MAX_BY_CHARS} characters` };
  const labels = parseLabels(draft.labels);
  if (labels.length > MAX_LABELS) return { error: `at most ${MAX_LABELS} labels` };
  const long = labels.find((label) => [...label].length > MAX_LABEL_CHARS);
  if (long) return { error: `label "${long.slice(0, 20)}…" is longer than ${MAX_LABEL_CHARS} characters` };
  const note = draft.note.trim();
  if ([...note].length > MAX_NOTE_CHARS) return { error: `a note of at most ${MAX_NOTE_CHARS} characters` };
  if (!draft.thumbs && labels.length === 0 && note === "") return { error: "give a thumb, a label or a note" };
  const annotation: AnnotationAdded = { by };
  if (draft.thumbs) annotation.thumbs = draft.thumbs;
  if (labels.length > 0) annotation.labels = labels;
  if (note !== "") annotation.note = note;
  if (draft.turn !== null) annotation.turn = draft.turn;
  return annotation;
}

/**
 * The turn the cursor at `position` is in, by the position where it ended: after the first
 * `workflow:completed` at or after the event at the cursor (seq `position - 1`; from the first
 * event at position 0). `null` when no turn ends there (one still runs), `undefined` when an
 * event on the way has not been read yet.
 */
export function turnAt(eventAt: (seq: number) => Pick<Recorded, "name"> | undefined, position: number, len: number): number | null | undefined {
  for (let seq = Math.max(0, position - 1); seq < len; seq++) {
    const event = eventAt(seq);
    if (!event) return undefined;
    if (event.name === "workflow:completed") return seq + 1;
  }
  return null;
}

/** One turn's online scores: each scorer's latest. */
export interface TurnScores {
  /** The position where the turn ended. */
  turn: number;
  scores: OnlineScore[];
}

/** Online scores grouped by turn (in order), each scorer's latest per turn, scorers by name. */
export function scoresByTurn(scores: readonly OnlineScore[]): TurnScores[] {
  const turns = new Map<number, Map<string, OnlineScore>>();
  for (const score of scores) {
    let byScorer = turns.get(score.turn);
    if (!byScorer) turns.set(score.turn, (byScorer = new Map()));
    byScorer.set(score.scorer, score);
  }
  return [...turns.entries()]
    .sort(([a], [b]) => a - b)
    .map(([turn, byScorer]) => ({ turn, scores: [...byScorer.values()].sort((a, b) => a.scorer.localeCompare(b.scorer)) }));
}

/** What an annotation is about: `turn ending at 6`, or `the session`. */
export function subjectOf(annotation: Pick<Annotation, "turn" | "run">): string {
  const run = annotation.run;
  const about = annotation.turn ? `turn ending at ${annotation.turn}` : "the session";
  return run ? `${about} · ${run.experiment} ${run.case}/${run.variant} #${run.repeat}` : about;
}

/** An annotation's thumb as a sign: 👍, 👎, or "" without one. */
export function thumbSign(thumbs: Annotation["thumbs"]): string {
  return thumbs === "up" ? "👍" : thumbs === "down" ? "👎" : "";
}
