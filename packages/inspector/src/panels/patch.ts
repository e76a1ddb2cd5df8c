// The patch the event at the cursor made: the RFC 6902 operations from position `p - 1` to `p`
// (at most 200 shown, long values cut).

import type { JsonPatchOperation } from "@openharness/client";
import { el } from "../tree";

export function renderPatch(box: HTMLElement, patch: readonly JsonPatchOperation[], position: number): void {
  box.dataset.position = String(position);
  if (patch.length === 0) {
    box.replaceChildren(el("div", "hint", position === 0 ? "Position 0 has no event." : "This event did not change the state."));
    return;
  }
  const list = el("ol", "ops");
  for (const op of patch.slice(0, 200)) {
    const item = el("li", `op ${op.op}`);
    item.append(el("span", "opname", op.op), el("span", "path", op.path || "(root)"));
    if ("value" in op) {
      const text = JSON.stringify(op.value);
      item.append(el("code", "value", text.length > 300 ? text.slice(0, 300) + "…" : text));
    }
    list.append(item);
  }
  box.replaceChildren(list);
  if (patch.length > 200) box.append(el("div", "hint", `+${patch.length - 200} more operations`));
}
