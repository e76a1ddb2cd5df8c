/**
 * Errors of the Open Harness client: every error answer of the server is
 * `{"error": {"code", "message"}}` with an HTTP status, and becomes an {@link OpenHarnessError}.
 */

/** The codes the server answers today; others may come, so `code` is also any string. */
export type KnownErrorCode =
  | "bad_request"
  | "not_found"
  | "session_busy"
  | "request_not_open"
  | "has_forks"
  | "missing_parent"
  | "unhosted_session"
  | "cannot_continue"
  | "no_fork_point"
  | "too_many_streams"
  | "payload_too_large"
  | "unsupported_media_type"
  | "unauthorized"
  | "stream_failed"
  | "internal";

/** An error the server answered, or one the client met talking to it. */
export class OpenHarnessError extends Error {
  override readonly name: string = "OpenHarnessError";
  /** The HTTP status (0 when no answer came: network failure, aborted request). */
  readonly status: number;
  /**
   * The server's stable code (`not_found`, `session_busy`, ...); `network` when no answer came,
   * `bad_response` when the answer was not what the API documents.
   */
  readonly code: KnownErrorCode | "network" | "bad_response" | (string & {});

  constructor(status: number, code: OpenHarnessError["code"], message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.status = status;
    this.code = code;
  }

  /** Whether trying again later may succeed (network failures, 408, 429, 5xx, a stopped stream). */
  get retryable(): boolean {
    return (
      this.status === 0 ||
      this.status === 408 ||
      this.status === 429 ||
      this.status >= 500 ||
      this.code === "stream_failed"
    );
  }
}

/** The error a failed response carries: the server's `{"error":{code,message}}` when it sent one. */
export async function errorFromResponse(response: Response): Promise<OpenHarnessError> {
  let text = "";
  try {
    text = await response.text();
  } catch {
    // The body could not be read: the status alone will do.
  }
  const parsed = parseErrorBody(text);
  if (parsed) return new OpenHarnessError(response.status, parsed.code, parsed.message);
  const fallback = text.trim() || response.statusText || `HTTP ${response.status}`;
  return new OpenHarnessError(response.status, codeForStatus(response.status), fallback);
}

/** `{"error":{"code","message"}}` read from `text`, if that is what it holds. */
export function parseErrorBody(text: string): { code: string; message: string } | null {
  try {
    const body: unknown = JSON.parse(text);
    if (typeof body !== "object" || body === null || !("error" in body)) return null;
    const error: unknown = (body as { error: unknown }).error;
    if (typeof error !== "object" || error === null) return null;
    const { code, message } = error as { code?: unknown; message?: unknown };
    if (typeof code !== "string" || typeof message !== "string") return null;
    return { code, message };
  } catch {
    return null;
  }
}

function codeForStatus(status: number): string {
  if (status === 401) return "unauthorized";
  if (status === 404) return "not_found";
  if (status === 409) return "conflict";
  if (status === 429) return "too_many_streams";
  if (status >= 500) return "internal";
  return "bad_request";
}

/** The error a rejected `fetch` becomes (network failure or abort). */
export function networkError(cause: unknown): OpenHarnessError {
  const message = cause instanceof Error ? cause.message : String(cause);
  return new OpenHarnessError(0, "network", `the server could not be reached: ${message}`, { cause });
}

/**
 * A live event stream stopped reconnecting: the session id and the last seq it delivered are
 * kept, and the session is reported as still running (nothing says its turn ended).
 */
export class StreamGaveUpError extends OpenHarnessError {
  override readonly name: string = "StreamGaveUpError";
  /** The session whose events were followed. */
  readonly sessionId: string;
  /** The last seq delivered (`null` if none): resume with `after: lastSeq`. */
  readonly lastSeq: number | null;
  /** How many connection attempts failed in a row. */
  readonly attempts: number;
  /** The stream gave up, not the session: as far as the client knows, it runs on. */
  readonly sessionStatus = "running" as const;

  constructor(sessionId: string, lastSeq: number | null, attempts: number, cause: unknown) {
    const why = cause instanceof Error ? cause.message : String(cause);
    super(
      cause instanceof OpenHarnessError ? cause.status : 0,
      "stream_gave_up",
      `stopped following session ${sessionId} after ${attempts} failed attempts (last seq ${lastSeq ?? "none"}); it may still be running: ${why}`,
      { cause },
    );
    this.sessionId = sessionId;
    this.lastSeq = lastSeq;
    this.attempts = attempts;
  }
}
