// The patch the event at the cursor made: the RFC 6902 operations from position `p - 1` to `p`
// (at most 200 shown, long values cut), each replaced or removed value beside the new one when
// the state before is known.

import type { JsonPatchOperation } from "@openharness/client";
import { oldValues } from "../diff";
import { el } from "../tree";

/** `before`: the state at `position - 1`, when known (the old values are shown). */
export function renderPatch(box: HTMLElement, patch: readonly JsonPatchOperation[], position: number, before?: { state: unknown }): void {
  box.dataset.position = String(position);
  if (patch.length === 0) {
    box.replaceChildren(el("div", "hint", position === 0 ? "Position 0 has no event." : "This event did not change the state."));
    return;
  }
  const shown = patch.slice(0, 200);
  box.replaceChildren(...opsList(patch, 200, before ? oldValues(before.state, shown) : []));
}

/**
 * The operations as a list — the first `most`, long values cut, each replaced or removed value
 * (`old[i]`, when known) beside the new one — and a hint counting the rest.
 */
export function opsList(ops: readonly JsonPatchOperation[], most: number, old: readonly unknown[] = []): HTMLElement[] {
  const list = el("ol", "ops");
  ops.slice(0, most).forEach((op, i) => {
    const item = el("li", `op ${op.op}`);
    item.append(el("span", "opname", op.op), el("span", "path", op.path || "(root)"));
    const values = el("span", "values");
    if (old[i] !== undefined) values.append(el("code", "old", cut(JSON.stringify(old[i]))));
    if (old[i] !== undefined && "value" in op) values.append(el("span", "arrow", "→"));
    if ("value" in op) values.append(el("code", "value", cut(JSON.stringify(op.value))));
    item.append(values);
    list.append(item);
  });
  return ops.length > most ? [list, el("div", "hint", `+${ops.length - most} more operations`)] : [list];
}

function cut(text: string): string {
  return text.length > 300 ? text.slice(0, 300) + "…" : text;
}
