/**
 * `@openharness/client`: a typed HTTP + SSE client for the Open Harness server.
 *
 * ```ts
 * import { OpenHarnessClient } from "@openharness/client";
 * const client = new OpenHarnessClient({ baseUrl: "http://127.0.0.1:8080" });
 * const { session } = await client.createSession("chat", "Hello");
 * for await (const event of client.followTurn(session)) console.log(event.seq, event.name);
 * ```
 */
export { OpenHarnessClient, isTurnEnd, MAX_PAGE, MAX_POSITIONS_PER_REQUEST } from "./client.js";
export type { ClientOptions, RequestOptions } from "./client.js";
export { OpenHarnessError, StreamGaveUpError, parseErrorBody } from "./errors.js";
export type { KnownErrorCode } from "./errors.js";
export { EventStream } from "./stream.js";
export type { ConnectionState, RetryOptions, StreamEventsOptions, StreamStatus } from "./stream.js";
export { SseParser, readSse } from "./sse.js";
export type { SseMessage } from "./sse.js";
export type * from "./types.js";
export { MessageProjection, deriveMessages } from "./messages.js";
export type { ChatMessage, ChatPart, TextPart, ToolPart, OutputPart, InputRequestPart, ErrorPart } from "./messages.js";
