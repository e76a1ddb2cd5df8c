/**
 * `@openharness/react`: React bindings for Open Harness workflows.
 *
 * - {@link useWorkflow}: AI SDK-familiar chat values plus `events`, `state` and a `tape`.
 * - {@link WorkflowProvider}: one shared workflow for a subtree.
 * - {@link WorkflowChat}: a zero-config chat with tape controls.
 */
export { useWorkflow, WorkflowProvider, useWorkflowController } from "./useWorkflow.js";
export type { Tape, UseWorkflowResult, WorkflowProviderProps } from "./useWorkflow.js";
export { WorkflowChat } from "./WorkflowChat.js";
export type { WorkflowChatProps } from "./WorkflowChat.js";
export { WorkflowController } from "./controller.js";
export type { ChatStatus, TapeSnapshot, WorkflowOptions, WorkflowSnapshot } from "./controller.js";
export type { ChatMessage, ChatPart, Recorded } from "@openharness/client";
export { OpenHarnessClient, OpenHarnessError, StreamGaveUpError } from "@openharness/client";
