// A JSON value as a tree of <details>: objects and arrays open to a small depth, and along the
// paths a patch touched (those nodes are marked); children of a node are built only when it is
// opened, and long arrays in slices, so a large state renders in a few milliseconds.

const SLICE = 100;

/** Renders `value` into `root`, marking (and opening the way to) the JSON Pointers in `touched`. */
export function renderTree(root: HTMLElement, value: unknown, touched: ReadonlySet<string>): void {
  root.replaceChildren(node("state", value, "", touched, 0));
}

function node(label: string, value: unknown, pointer: string, touched: ReadonlySet<string>, depth: number): HTMLElement {
  const hit = touched.has(pointer);
  if (value === null || typeof value !== "object") {
    const leaf = el("div", "leaf" + (hit ? " touched" : ""));
    leaf.dataset.pointer = pointer;
    leaf.append(el("span", "key", label), el("span", "sep", ": "), scalar(value));
    return leaf;
  }
  const entries = Array.isArray(value) ? value.length : Object.keys(value).length;
  const details = document.createElement("details");
  details.className = "branch" + (hit ? " touched" : "");
  details.dataset.pointer = pointer;
  const summary = document.createElement("summary");
  summary.append(
    el("span", "key", label),
    el("span", "sep", ": "),
    el("span", "kind", Array.isArray(value) ? `[${entries}]` : `{${entries}}`),
  );
  details.append(summary);
  const leadsToTouch = [...touched].some((p) => p.startsWith(pointer + "/"));
  let built = false;
  const build = (): void => {
    if (built) return;
    built = true;
    const children = el("div", "children");
    if (Array.isArray(value)) {
      appendSlice(children, value, 0, pointer, touched, depth);
    } else {
      for (const [key, child] of Object.entries(value as Record<string, unknown>)) {
        children.append(node(key, child, `${pointer}/${escape(key)}`, touched, depth + 1));
      }
    }
    details.append(children);
  };
  details.addEventListener("toggle", () => {
    if (details.open) build();
  });
  if ((depth < 2 && entries <= 50) || (depth < 4 && entries <= 8) || leadsToTouch || hit) {
    build();
    details.open = true;
  }
  return details;
}

function appendSlice(into: HTMLElement, items: unknown[], from: number, pointer: string, touched: ReadonlySet<string>, depth: number): void {
  // Long arrays: the slice holding a touched item first, else the start; "more" reads on.
  let start = from;
  if (from === 0 && items.length > SLICE) {
    const touchedIndex = [...touched]
      .filter((p) => p.startsWith(pointer + "/"))
      .map((p) => Number.parseInt(p.slice(pointer.length + 1).split("/")[0] ?? "", 10))
      .filter((n) => Number.isFinite(n))
      .sort((a, b) => a - b)[0];
    if (touchedIndex !== undefined && touchedIndex >= SLICE) {
      start = Math.max(0, touchedIndex - 10);
      const skipped = el("button", "more", `… ${start} items before`);
      skipped.addEventListener("click", () => {
        const replacement = el("div", "slice");
        appendSlice(replacement, items.slice(0, start), 0, pointer, touched, depth);
        skipped.replaceWith(replacement);
      });
      into.append(skipped);
    }
  }
  const end = Math.min(items.length, start + (start > from ? 20 : SLICE));
  for (let i = start; i < end; i++) into.append(node(String(i), items[i], `${pointer}/${i}`, touched, depth + 1));
  if (end < items.length) {
    const more = el("button", "more", `… ${items.length - end} more`);
    more.addEventListener("click", () => {
      more.remove();
      appendSlice(into, items, end, pointer, touched, depth);
    });
    into.append(more);
  }
}

function scalar(value: unknown): HTMLElement {
  const kind = value === null ? "null" : typeof value;
  const text = typeof value === "string" ? JSON.stringify(value) : String(value);
  return el("span", `value ${kind}`, text.length > 2000 ? text.slice(0, 2000) + "…" : text);
}

/** A JSON Pointer reference token. */
function escape(key: string): string {
  return key.replace(/~/g, "~0").replace(/\//g, "~1");
}

export function el(tag: string, className: string, text?: string): HTMLElement {
  const element = document.createElement(tag);
  if (className) element.className = className;
  if (text !== undefined) element.textContent = text;
  return element;
}
