// The experiments view: the store's experiments (`openharness eval`), and for one the cases ×
// variants matrix — per cell, each scorer's mean over the repeats and how many passed, and a
// chip per repeat's run. Two runs picked open side by side from their fork point (the session
// of the first, compared with the second).

import type { Experiment, ExperimentList, ExperimentRun, OpenHarnessClient } from "@openharness/client";
import { el } from "../tree";

/** One scorer's figures in a cell. */
export interface CellScore {
  /** The mean of its values over the runs that have one (null: none has). */
  mean: number | null;
  passed: number;
  total: number;
}

/** One case × variant: its runs (by repeat) and each scorer's figures. */
export interface Cell {
  runs: ExperimentRun[];
  scores: Map<string, CellScore>;
}

export interface Matrix {
  cases: string[];
  variants: string[];
  scorers: string[];
  cell(caseId: string, variant: string): Cell;
}

/** The cases × variants matrix of an experiment (cases and variants in their defined order). */
export function matrix(experiment: Experiment): Matrix {
  const cases = experiment.definition.cases.map((c) => c.id);
  const variants = experiment.definition.variants.map((v) => v.name);
  const scorers = experiment.definition.scorers.map((s) => s.name);
  const cells = new Map<string, Cell>();
  const key = (caseId: string, variant: string) => JSON.stringify([caseId, variant]);
  for (const run of [...experiment.runs].sort((a, b) => a.run.repeat - b.run.repeat)) {
    const k = key(run.run.case, run.run.variant);
    let cell = cells.get(k);
    if (!cell) {
      cell = { runs: [], scores: new Map() };
      cells.set(k, cell);
    }
    cell.runs.push(run);
  }
  for (const cell of cells.values()) {
    for (const scorer of scorers) {
      const scored = cell.runs.map((run) => run.scores[scorer]).filter((s) => s !== undefined);
      const values = scored.map((s) => s.value).filter((v): v is number => typeof v === "number");
      cell.scores.set(scorer, {
        mean: values.length > 0 ? values.reduce((a, b) => a + b, 0) / values.length : null,
        passed: scored.filter((s) => s.passed).length,
        total: scored.length,
      });
    }
  }
  const empty: Cell = { runs: [], scores: new Map() };
  return { cases, variants, scorers, cell: (caseId, variant) => cells.get(key(caseId, variant)) ?? empty };
}

/** The experiments as a list of buttons (the open one marked). */
export function renderExperimentList(box: HTMLElement, list: ExperimentList, open: string | null): void {
  if (list.experiments.length === 0) {
    box.replaceChildren(el("li", "hint", "No experiments in this store: `openharness eval run FILE` starts one."));
    return;
  }
  box.replaceChildren(
    ...list.experiments.map((experiment) => {
      const item = el("li", "");
      const button = el("button", experiment.name === open ? "link experiment-link open" : "link experiment-link", experiment.name);
      button.dataset.experiment = experiment.name;
      item.append(button, el("span", "hint", ` ${experiment.events} events · ${experiment.lastEvent.slice(0, 16).replace("T", " ")}`));
      return item;
    }),
  );
}

/** The matrix of `experiment`; `picked`: the sessions of the runs picked (at most two). */
export function renderMatrix(box: HTMLElement, experiment: Experiment, picked: readonly string[]): void {
  const m = matrix(experiment);
  const { definition } = experiment;
  const head = el("div", "experiment-head", `${experiment.name}: ${m.cases.length} cases × ${m.variants.length} variants × ${definition.repeats} repeats, baseline ${definition.baseline}`);
  const table = el("table", "matrix");
  const header = el("tr", "");
  header.append(el("th", "", "case"));
  for (const variant of m.variants) header.append(el("th", variant === definition.baseline ? "baseline" : "", variant));
  table.append(header);
  for (const caseId of m.cases) {
    const row = el("tr", "");
    row.append(el("th", "case", caseId));
    for (const variant of m.variants) {
      const cell = m.cell(caseId, variant);
      const td = el("td", "cell");
      td.dataset.case = caseId;
      td.dataset.variant = variant;
      for (const scorer of m.scorers) {
        const score = cell.scores.get(scorer);
        if (!score || score.total === 0) continue;
        const mean = score.mean === null ? "–" : score.mean.toFixed(2);
        const line = el("div", `score${score.passed === score.total ? " pass" : score.passed === 0 ? " fail" : " mixed"}`, `${scorer} ${mean} · ${score.passed}/${score.total}`);
        line.dataset.scorer = scorer;
        td.append(line);
      }
      const chips = el("div", "runs");
      for (const run of cell.runs) {
        const session = run.run.session;
        const chip = el("button", `run${run.run.status === "completed" ? "" : " failed"}${session && picked.includes(session) ? " picked" : ""}`, `#${run.run.repeat}`);
        chip.title = session ? `${session}${run.run.error ? `: ${run.run.error}` : ""} (${run.run.latencyMs.toFixed(0)} ms)` : run.run.error ?? "no session";
        if (session) chip.dataset.run = session;
        else (chip as HTMLButtonElement).disabled = true;
        chips.append(chip);
      }
      td.append(chips);
      row.append(td);
    }
    table.append(row);
  }
  const compare = el("button", "compare-runs", picked.length === 2 ? "Compare the two runs picked" : "Pick two runs (the #chips) to compare them");
  compare.id = "compare-runs";
  (compare as HTMLButtonElement).disabled = picked.length !== 2;
  box.replaceChildren(head, table, compare);
}

/** The dialog: reads the list when opened, an experiment when one is clicked. */
export class ExperimentsView {
  private list: ExperimentList | null = null;
  private experiment: Experiment | null = null;
  private picked: string[] = [];

  constructor(
    private readonly $: { dialog: HTMLDialogElement; list: HTMLElement; experiment: HTMLElement; button: HTMLElement },
    private readonly client: () => OpenHarnessClient,
    private readonly compare: (a: string, b: string) => void,
    private readonly fail: (error: unknown) => void,
  ) {
    $.list.addEventListener("click", (event) => {
      const name = (event.target as HTMLElement).closest<HTMLElement>("[data-experiment]")?.dataset.experiment;
      if (name) void this.show(name);
    });
    $.experiment.addEventListener("click", (event) => {
      const target = event.target as HTMLElement;
      const run = target.closest<HTMLElement>("[data-run]")?.dataset.run;
      if (run) {
        this.picked = this.picked.includes(run) ? this.picked.filter((p) => p !== run) : [...this.picked, run].slice(-2);
        this.render();
        return;
      }
      if (target.closest("#compare-runs") && this.picked.length === 2) {
        const [a, b] = this.picked as [string, string];
        $.dialog.close();
        this.compare(a, b);
      }
    });
  }

  /** Shows the button when the server serves experiments (a server without them answers 404). */
  async probe(): Promise<void> {
    try {
      await this.client().experiments();
      this.$.button.hidden = false;
    } catch {
      this.$.button.hidden = true;
    }
  }

  async open(): Promise<void> {
    this.$.dialog.showModal();
    try {
      this.list = await this.client().experiments();
      renderExperimentList(this.$.list, this.list, this.experiment?.name ?? null);
      const first = this.list.experiments[0];
      if (!this.experiment && first) await this.show(first.name);
    } catch (error) {
      this.fail(error);
    }
  }

  private async show(name: string): Promise<void> {
    try {
      this.experiment = await this.client().experiment(name);
      this.picked = [];
      if (this.list) renderExperimentList(this.$.list, this.list, name);
      this.render();
    } catch (error) {
      this.fail(error);
    }
  }

  private render(): void {
    if (this.experiment) renderMatrix(this.$.experiment, this.experiment, this.picked);
  }
}
