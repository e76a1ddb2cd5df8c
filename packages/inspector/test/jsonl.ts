// Writing sessions as `openharness export` does (JSONL: per session a begin line, one line per
// event with its seq, an end line with the count), for `openharness import`, deterministically:
// ids are UUID v7 from a clock that only moves when told and a seeded xorshift generator, so the
// same calls give the same bytes. The test and bench generators build on it.

import { type WriteStream, createWriteStream } from "node:fs";

export class JsonlWriter {
  private readonly out: WriteStream;
  private seed: number;
  /** The clock ids and timestamps are made from, in milliseconds since the epoch. */
  clock: number;

  constructor(path: string, options: { clock: number; seed: number }) {
    this.out = createWriteStream(path);
    this.clock = options.clock;
    this.seed = options.seed;
  }

  private random(): number {
    this.seed ^= this.seed << 13;
    this.seed ^= this.seed >>> 17;
    this.seed ^= this.seed << 5;
    return this.seed >>> 0;
  }

  /** A UUID v7 at the clock's time. */
  uuid(): string {
    const hex = (value: number, digits: number): string => value.toString(16).padStart(digits, "0").slice(-digits);
    const ms = hex(this.clock, 12);
    return `${ms.slice(0, 8)}-${ms.slice(8)}-7${hex(this.random(), 3)}-${hex(0x8000 | (this.random() & 0x3fff), 4)}-${hex(this.random(), 8)}${hex(this.random(), 4)}`;
  }

  /** The clock's time as the store writes timestamps. */
  timestamp(): string {
    return new Date(this.clock).toISOString().replace("Z", "000000Z");
  }

  /** Writes one line, waiting while the stream is full. */
  line(value: unknown): Promise<void> {
    return new Promise((resolve) => {
      if (this.out.write(JSON.stringify(value) + "\n")) resolve();
      else this.out.once("drain", () => resolve());
    });
  }

  /** Begins session `id`: its events are written through the answer, then `end()`. */
  async begin(id: string): Promise<SessionLines> {
    await this.line({ session: id, begin: true });
    return new SessionLines(this, id);
  }

  close(): Promise<void> {
    return new Promise<void>((resolve, reject) => this.out.end((error?: Error | null) => (error ? reject(error) : resolve())));
  }
}

/** One session's event lines, numbered. */
export class SessionLines {
  /** Events written so far (the next one's seq). */
  seq = 0;

  constructor(
    private readonly writer: JsonlWriter,
    readonly session: string,
  ) {}

  /** Writes an event `step` ms after the last one; answers its id. */
  async event(name: string, payload: unknown, causedBy: string | null = null, step = 1): Promise<string> {
    this.writer.clock += step;
    const id = this.writer.uuid();
    await this.writer.line({ session: this.session, seq: this.seq, id, name, payload, timestamp: this.writer.timestamp(), causedBy });
    this.seq++;
    return id;
  }

  /** The end line, with the count. */
  end(): Promise<void> {
    return this.writer.line({ session: this.session, end: true, count: this.seq });
  }
}
