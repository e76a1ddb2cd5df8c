// The JSON patch between two states, computed as the server computes `GET …/diff` (the
// json-patch crate's `diff`: objects key by key, arrays index by index, removals shifting the
// index), so stepping over states already read needs no request. The tests compare the two on
// every position of real sessions.

import type { JsonPatchOperation } from "@openharness/client";

export function diff(left: unknown, right: unknown): JsonPatchOperation[] {
  const patch: JsonPatchOperation[] = [];
  walk(left, right, "", patch);
  return patch;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function walk(left: unknown, right: unknown, pointer: string, patch: JsonPatchOperation[]): void {
  if (isObject(left) && isObject(right)) {
    for (const key of sortedKeys(right)) {
      const path = `${pointer}/${escape(key)}`;
      if (Object.prototype.hasOwnProperty.call(left, key)) walk(left[key], right[key], path, patch);
      else patch.push({ op: "add", path, value: right[key] });
    }
    for (const key of sortedKeys(left)) {
      if (!Object.prototype.hasOwnProperty.call(right, key)) patch.push({ op: "remove", path: `${pointer}/${escape(key)}` });
    }
    return;
  }
  if (Array.isArray(left) && Array.isArray(right)) {
    let shift = 0;
    for (let i = 0; i < Math.max(left.length, right.length); i++) {
      const path = `${pointer}/${i - shift}`;
      if (i < left.length && i < right.length) walk(left[i], right[i], path, patch);
      else if (i < left.length) {
        shift++;
        patch.push({ op: "remove", path });
      } else patch.push({ op: "add", path, value: right[i] });
    }
    return;
  }
  if (!equal(left, right)) patch.push({ op: "replace", path: pointer, value: right });
}

/** Keys in the order the server's JSON maps keep them (sorted by their UTF-8 bytes). */
function sortedKeys(value: Record<string, unknown>): string[] {
  const keys = Object.keys(value);
  // UTF-16 order is code-point order unless a key holds a surrogate pair.
  return keys.some((key) => /[\uD800-\uDFFF]/.test(key)) ? keys.sort(compareUtf8) : keys.sort();
}

function compareUtf8(a: string, b: string): number {
  // Code-point order is UTF-8 byte order; JavaScript compares UTF-16 units, which differs
  // only for characters beyond the BMP against U+E000..U+FFFF.
  const x = [...a];
  const y = [...b];
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = x[i]!.codePointAt(0)! - y[i]!.codePointAt(0)!;
    if (d !== 0) return d;
  }
  return x.length - y.length;
}

function equal(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((v, i) => equal(v, b[i]));
  if (isObject(a) && isObject(b)) {
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((k) => Object.prototype.hasOwnProperty.call(b, k) && equal(a[k], b[k]));
  }
  return false;
}

function escape(key: string): string {
  return key.replace(/~/g, "~0").replace(/\//g, "~1");
}

/**
 * What each operation of `patch` replaced or removed, applying them in order to a copy of
 * `before` (an operation sees the document the ones before it left); `undefined` for an `add`,
 * or where the path is not found.
 */
export function oldValues(before: unknown, patch: readonly JsonPatchOperation[]): unknown[] {
  const root: { doc: unknown } = { doc: structuredClone(before) };
  return patch.map((op) => {
    const keys = op.path === "" ? [] : op.path.slice(1).split("/").map((k) => k.replace(/~1/g, "/").replace(/~0/g, "~"));
    // The container of the last key, from the root's holder.
    let parent: unknown = root;
    let key: string = "doc";
    for (const next of keys) {
      parent = child(parent, key);
      key = next;
      if (parent === undefined) return undefined;
    }
    const old = op.op === "add" ? undefined : child(parent, key);
    if (op.op === "replace" || op.op === "add" || op.op === "remove") {
      if (Array.isArray(parent)) {
        const index = key === "-" ? parent.length : Number(key);
        if (op.op === "replace") parent[index] = op.value;
        else if (op.op === "add") parent.splice(index, 0, op.value);
        else parent.splice(index, 1);
      } else if (parent !== null && typeof parent === "object") {
        const object = parent as Record<string, unknown>;
        if (op.op === "remove") delete object[key];
        else object[key] = op.value;
      }
    }
    return old;
  });
}

function child(container: unknown, key: string): unknown {
  if (Array.isArray(container)) return container[Number(key)];
  if (container !== null && typeof container === "object" && Object.prototype.hasOwnProperty.call(container, key)) {
    return (container as Record<string, unknown>)[key];
  }
  return undefined;
}
