// One session's events as the inspector holds them: a sparse array filled page by page (the
// pages the timeline shows first, then the rest in the background, in order), the agent-call
// groups computed over the contiguous prefix read so far, an index from event id to seq (for
// causes), and the states and patches read for positions, cached.

import type { JsonPatchOperation, OpenHarnessClient, Recorded, StateAt } from "@openharness/client";

/** Events per page (the server's most is 1000). */
export const PAGE = 500;

/** One agent call: `agent:started` … `agent:completed` and the events between that belong to it. */
export interface Group {
  /** The seq of its `agent:started`. */
  start: number;
  agent: string;
  /** The event that activated the agent: the events of the call are caused by it. */
  trigger: string | null;
  /** The seq of its `agent:completed`, once read. */
  end: number | null;
  outcome: string | null;
  count: number;
  /** When it started and, once read, ended (RFC 3339, as recorded). */
  startedAt: string;
  endedAt: string | null;
  /** Tokens it used, summed over its requests (from its `agent:completed`). */
  tokens: { input: number; output: number } | null;
  /** What it cost in US dollars, when the provider reported it. */
  cost: number | null;
}

export class Tape {
  len: number;
  readonly events: (Recorded | undefined)[] = [];
  /** For each seq of the scanned prefix, the start seq of its group, or -1. */
  private groupOf = new Int32Array(0);
  readonly groups = new Map<number, Group>();
  private open: Group[] = [];
  /** Events read and grouped: seqs `0..scanned`. */
  scanned = 0;
  private readonly idToSeq = new Map<string, number>();
  private readonly effectsOf = new Map<string, number[]>();
  private readonly pages = new Map<number, Promise<void>>();
  private readonly states = new Map<number, unknown>();
  private readonly statesInFlight = new Map<number, Promise<void>>();
  private readonly patches = new Map<number, JsonPatchOperation[]>();
  private scanning = false;
  private disposed = false;
  /** Counts changes to what the timeline shows (events read, groups computed). */
  version = 0;
  /** Called (at most once a frame by the page) when events were read. */
  onChange: () => void = () => {};

  /**
   * `cap`: read no further than this many events (a fork's view of its parent: the events
   * before its fork point).
   */
  constructor(
    private readonly client: OpenHarnessClient,
    readonly session: string,
    len: number,
    readonly cap = Number.POSITIVE_INFINITY,
  ) {
    this.len = Math.min(len, cap);
  }

  dispose(): void {
    this.disposed = true;
  }

  /** Reads the pages covering seqs `from..to` (those not read or being read). */
  ensure(from: number, to: number): Promise<void> {
    const first = Math.max(0, Math.floor(from / PAGE));
    const last = Math.floor(Math.max(0, Math.min(to, this.len) - 1) / PAGE);
    const waits: Promise<void>[] = [];
    for (let page = first; page <= last; page++) waits.push(this.page(page));
    return Promise.all(waits).then(() => undefined);
  }

  private page(page: number): Promise<void> {
    let loading = this.pages.get(page);
    if (!loading) {
      loading = this.client
        .events(this.session, { after: page === 0 ? null : page * PAGE - 1, limit: PAGE })
        .then((answer) => {
          if (this.disposed) return;
          for (const event of answer.events) this.put(event);
          if (answer.len > this.len) this.len = Math.min(answer.len, this.cap);
          this.advance();
          this.onChange();
        })
        .catch((error: unknown) => {
          this.pages.delete(page);
          throw error;
        });
      this.pages.set(page, loading);
    }
    return loading;
  }

  private put(event: Recorded): void {
    if (event.seq >= this.cap) return;
    this.version++;
    this.events[event.seq] = event;
    this.idToSeq.set(event.id, event.seq);
  }

  /** An event that arrived live (SSE). */
  append(event: Recorded): void {
    this.put(event);
    if (event.seq + 1 > this.len) this.len = event.seq + 1;
    this.advance();
  }

  has(seq: number): boolean {
    return this.events[seq] !== undefined;
  }

  /** Groups the events read after the scanned prefix, as far as they are contiguous. */
  private advance(): void {
    while (this.scanned < this.len) {
      const event = this.events[this.scanned];
      if (!event) break;
      if (this.groupOf.length <= this.scanned) {
        const grown = new Int32Array(Math.max(1024, this.len, this.groupOf.length * 2));
        grown.set(this.groupOf);
        this.groupOf = grown;
      }
      this.groupOf[this.scanned] = this.assign(event);
      if (event.causedBy) {
        const effects = this.effectsOf.get(event.causedBy);
        if (effects) effects.push(event.seq);
        else this.effectsOf.set(event.causedBy, [event.seq]);
      }
      this.scanned++;
    }
  }

  /**
   * The group an event belongs to. An agent call's events are those caused by the event that
   * activated the agent (the store records `agent:started`, what the agent emits and
   * `agent:completed` with that cause), or naming the agent (`text:delta {agentName}`), while the
   * call is open.
   */
  private assign(event: Recorded): number {
    const payload = (event.payload ?? {}) as { agentName?: unknown; outcome?: unknown; usage?: unknown; cost?: unknown };
    const agent = typeof payload.agentName === "string" ? payload.agentName : null;
    if (event.name === "agent:started") {
      const group: Group = {
        start: event.seq,
        agent: agent ?? "agent",
        trigger: event.causedBy,
        end: null,
        outcome: null,
        count: 1,
        startedAt: event.timestamp,
        endedAt: null,
        tokens: null,
        cost: null,
      };
      this.groups.set(event.seq, group);
      this.open.push(group);
      return event.seq;
    }
    let owner: Group | undefined;
    for (let i = this.open.length - 1; i >= 0; i--) {
      const group = this.open[i]!;
      const byCause = event.causedBy !== null && group.trigger === event.causedBy;
      const byName = agent !== null && group.agent === agent;
      if (event.name === "agent:completed" ? byName && (byCause || event.causedBy === null) : byCause || (byName && event.causedBy === null)) {
        owner = group;
        break;
      }
    }
    if (!owner) return -1;
    owner.count++;
    if (event.name === "agent:completed") {
      owner.end = event.seq;
      owner.outcome = typeof payload.outcome === "string" ? payload.outcome : null;
      owner.endedAt = event.timestamp;
      owner.tokens = tokensOf(payload.usage);
      owner.cost = typeof payload.cost === "number" ? payload.cost : null;
      this.open.splice(this.open.indexOf(owner), 1);
    }
    return owner.start;
  }

  /** The start seq of the group `seq` belongs to, -1 for none, null while not scanned. */
  groupAt(seq: number): number | null {
    return seq < this.scanned ? (this.groupOf[seq] ?? -1) : null;
  }

  /** Reads every page in order, in the background, so groups, search and causes cover all. */
  async scan(onProgress: () => void): Promise<void> {
    if (this.scanning) return;
    this.scanning = true;
    try {
      while (!this.disposed && this.scanned < this.len) {
        await this.ensure(this.scanned, this.scanned + 1);
        onProgress();
        // Let key presses and paints in between pages.
        await new Promise((resolve) => setTimeout(resolve, 0));
      }
    } finally {
      this.scanning = false;
    }
  }

  /** The seq of the event with id `id`, reading pages if it was not read yet. */
  async seqOf(id: string, before: number): Promise<number | null> {
    const known = this.idToSeq.get(id);
    if (known !== undefined) return known;
    // Event ids are UUID v7: their text sorts by creation time, and events are appended in
    // about that order. Halve the range by the id of the middle event, then read its page.
    let lo = 0;
    let hi = Math.min(before, this.len - 1);
    while (hi - lo > PAGE) {
      const mid = (lo + hi) >> 1;
      await this.ensure(mid, mid + 1);
      const there = this.events[mid];
      if (!there) return null;
      if (there.id === id) return mid;
      if (there.id < id) lo = mid;
      else hi = mid;
    }
    await this.ensure(Math.max(0, lo - PAGE), Math.min(this.len, hi + PAGE));
    return this.idToSeq.get(id) ?? null;
  }

  /** The seqs of the read events caused by `id`. */
  effects(id: string): number[] {
    return this.effectsOf.get(id) ?? [];
  }

  /** Seqs of the scanned events whose name contains `text`. */
  search(text: string): number[] {
    const needle = text.trim().toLowerCase();
    if (needle === "") return [];
    const found: number[] = [];
    for (let seq = 0; seq < this.scanned; seq++) {
      if (this.events[seq]!.name.toLowerCase().includes(needle)) found.push(seq);
    }
    return found;
  }

  stateAt(position: number): { known: true; state: unknown } | { known: false } {
    return this.states.has(position) ? { known: true, state: this.states.get(position) } : { known: false };
  }

  /**
   * Reads the state at `position` and, in the same request, the states around it (more in the
   * direction the cursor moves), so stepping on needs no request per step.
   */
  loadStates(position: number, direction: number): Promise<void> {
    const inFlight = this.statesInFlight.get(position);
    if (inFlight) return inFlight;
    if (this.states.has(position)) return Promise.resolve();
    return this.loadWindow(position, direction);
  }

  /**
   * Reads the states of the window around `position` not read or being read (64 ahead in the
   * direction the cursor moves, 4 behind), in one request.
   */
  loadWindow(position: number, direction: number): Promise<void> {
    const ahead = 64;
    const behind = 4;
    const from = Math.max(0, direction < 0 ? position - ahead : position - behind);
    const to = Math.min(this.len, direction < 0 ? position + behind : position + ahead);
    const wanted: number[] = [];
    for (let p = from; p <= to; p++) if (!this.states.has(p) && !this.statesInFlight.has(p)) wanted.push(p);
    if (!wanted.includes(position) && !this.states.has(position) && !this.statesInFlight.has(position)) wanted.push(position);
    return wanted.length === 0 ? Promise.resolve() : this.request(wanted);
  }

  /**
   * Reads the states at `positions` not read yet, in one request (at most 1000); resolves when
   * those being read by an earlier request have arrived too.
   */
  loadPositions(positions: number[]): Promise<void> {
    const unread = [...new Set(positions)].filter((p) => p >= 0 && p <= this.len && !this.states.has(p));
    const pending = new Set<Promise<void>>();
    for (const p of unread) {
      const inFlight = this.statesInFlight.get(p);
      if (inFlight) pending.add(inFlight);
    }
    const wanted = unread.filter((p) => !this.statesInFlight.has(p)).slice(0, 1000);
    if (wanted.length > 0) pending.add(this.request(wanted));
    return Promise.all(pending).then(() => undefined);
  }

  private request(wanted: number[]): Promise<void> {
    const loading = this.client.statesAt(this.session, wanted).then((states: StateAt[]) => {
      for (const at of states) this.remember(at.position, at.state);
      for (const p of wanted) this.statesInFlight.delete(p);
    });
    loading.catch(() => {
      for (const p of wanted) this.statesInFlight.delete(p);
    });
    for (const p of wanted) this.statesInFlight.set(p, loading);
    return loading;
  }

  /**
   * Reads the next window ahead of time when the cursor, moving in `direction`, gets near the
   * end of the states read, so steady stepping never waits for the server.
   */
  prefetch(position: number, direction: number): void {
    const ahead = clamp(position + direction * 32, 0, this.len);
    if (!this.states.has(ahead) && !this.statesInFlight.has(ahead)) {
      this.loadStates(ahead, direction).catch(() => {
        // The step that needs it asks again and reports the error.
      });
    }
  }

  private remember(position: number, state: unknown): void {
    // Keep the cache bounded: the oldest positions read go first.
    if (this.states.size >= 512) {
      const oldest = this.states.keys().next();
      if (!oldest.done) this.states.delete(oldest.value);
    }
    this.states.set(position, state);
  }

  patchAt(position: number): JsonPatchOperation[] | undefined {
    return this.patches.get(position);
  }

  /** The patch the event before `position` made: the diff from `position - 1` to `position`. */
  async loadPatch(position: number): Promise<JsonPatchOperation[]> {
    const known = this.patches.get(position);
    if (known) return known;
    const patch = position === 0 ? [] : await this.client.diff(this.session, position - 1, position);
    this.rememberPatch(position, patch);
    return patch;
  }

  /** Keeps the patch at `position` (computed in the page from two states read). */
  rememberPatch(position: number, patch: JsonPatchOperation[]): void {
    if (this.patches.size >= 4096) {
      const oldest = this.patches.keys().next();
      if (!oldest.done) this.patches.delete(oldest.value);
    }
    this.patches.set(position, patch);
  }
}

function clamp(value: number, min: number, max: number): number {
  return Math.min(max, Math.max(min, value));
}

/** Input and output tokens from an `agent:completed`'s `usage`, when it has them. */
function tokensOf(usage: unknown): { input: number; output: number } | null {
  if (!usage || typeof usage !== "object") return null;
  const { inputTokens, outputTokens } = usage as { inputTokens?: unknown; outputTokens?: unknown };
  if (typeof inputTokens !== "number" || typeof outputTokens !== "number") return null;
  return { input: inputTokens, output: outputTokens };
}

/** Milliseconds from `from` to `to` (RFC 3339 timestamps), never negative. */
export function millisBetween(from: string, to: string): number {
  return Math.max(0, Date.parse(to) - Date.parse(from));
}

/** A duration as people read it: `840 ms`, `12.3 s`, `4 min 05 s`. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const minutes = Math.floor(ms / 60_000);
  const seconds = Math.floor((ms % 60_000) / 1000);
  return `${minutes} min ${String(seconds).padStart(2, "0")} s`;
}

/** A call's figures in one line: duration (or elapsed while it runs), tokens, cost. */
export function callFigures(group: Group, now: number | null): string {
  const parts: string[] = [];
  if (group.endedAt !== null) parts.push(formatDuration(millisBetween(group.startedAt, group.endedAt)));
  else if (now !== null) parts.push(`running ${formatDuration(Math.max(0, now - Date.parse(group.startedAt)))}`);
  if (group.tokens) parts.push(`${group.tokens.input.toLocaleString("en")} in / ${group.tokens.output.toLocaleString("en")} out tok`);
  if (group.cost !== null) parts.push(`$${group.cost < 0.01 ? group.cost.toPrecision(2) : group.cost.toFixed(2)}`);
  return parts.join(" · ");
}
