/**
 * `useWorkflow`: a session of an Open Harness workflow in a React component — the AI SDK 4
 * names (`messages, input, setInput, handleSubmit, isLoading, error`), the AI SDK 5 ones
 * (`status, sendMessage, stop`), and `events`, `state` and a `tape` whose moves update `state`
 * AND `messages`.
 */
import { createContext, createElement, useContext, useEffect, useMemo, useRef, useState, useSyncExternalStore, type ReactNode } from "react";
import type { ChatMessage, ConnectionState, InputRequestPart, Recorded, SessionStatus } from "@openharness/client";
import { WorkflowController, type ChatStatus, type WorkflowOptions } from "./controller.js";

/** The tape: the cursor and its moves. */
export interface Tape {
  /** Events applied at the cursor (0: the initial state; `length`: the end). */
  position: number;
  /** Events recorded so far. */
  length: number;
  /** To position 0. */
  rewind(): void;
  /** One event forward. */
  step(): void;
  /** One event back. */
  stepBack(): void;
  /** To `position` (at the end the cursor follows the live end again). */
  stepTo(position: number): void;
  /** Plays forward (one event every `intervalMs`, default 250) to the end. */
  play(options?: { intervalMs?: number }): void;
  /** Plays to `position`, then pauses. */
  playTo(position: number, options?: { intervalMs?: number }): void;
  /** Stops playing. */
  pause(): void;
  /** The cursor follows the live end. */
  isRecording: boolean;
  /** The cursor shows the past (or is playing). */
  isReplaying: boolean;
  isPlaying: boolean;
  /** The state at the cursor is being read. */
  isLoadingState: boolean;
}

/** What `useWorkflow` returns. */
export interface UseWorkflowResult<State = unknown> {
  /** The chat messages at the tape's cursor. Ids are `msg-<event id>`: stable. */
  messages: readonly ChatMessage[];
  input: string;
  setInput: (input: string) => void;
  /** Sends `input` (a form's `onSubmit`). */
  handleSubmit: (event?: { preventDefault?: () => void }) => void;
  /** `status` is `submitted` or `streaming`. */
  isLoading: boolean;
  error: Error | undefined;
  status: ChatStatus;
  /** Sends a message: a string, or AI SDK 5's `{ text }`. */
  sendMessage: (message: string | { text: string }) => Promise<void>;
  /** Cancels the running turn. */
  stop: () => Promise<void>;
  /** Every event of the session. */
  events: readonly Recorded[];
  /** The workflow's state at the tape's cursor. */
  state: State | undefined;
  tape: Tape;
  sessionId: string | null;
  sessionStatus: SessionStatus | null;
  connection: ConnectionState | "idle";
  /** The open request to a person; the next message answers it. */
  pendingRequest: InputRequestPart["data"] | null;
  /** Answers a request to a person. */
  respond: (requestId: string, text: string) => Promise<void>;
  /** Follows the session again after its stream gave up. */
  reconnect: () => void;
  /** Opens another session (`null`: a new one). */
  openSession: (sessionId: string | null) => void;
  /** The controller behind all this (framework-agnostic). */
  controller: WorkflowController<State>;
}

const WorkflowContext = createContext<WorkflowController<unknown> | null>(null);

/** Props of {@link WorkflowProvider}: the options of {@link useWorkflow}. */
export interface WorkflowProviderProps extends WorkflowOptions {
  children?: ReactNode;
}

/** One shared workflow for everything inside: `useWorkflow()` without options reads it. */
export function WorkflowProvider({ children, ...options }: WorkflowProviderProps) {
  const controller = useController(options);
  return createElement(WorkflowContext.Provider, { value: controller }, children);
}

/** The controller of the nearest {@link WorkflowProvider}, if any. */
export function useWorkflowController<State = unknown>(): WorkflowController<State> | null {
  return useContext(WorkflowContext) as WorkflowController<State> | null;
}

function useController<State>(options: WorkflowOptions): WorkflowController<State> {
  const [controller] = useState(() => new WorkflowController<State>(options));
  const latest = useRef(options);
  latest.current = options;
  useEffect(() => {
    controller.connect();
    return () => controller.disconnect();
  }, [controller]);
  // A new `sessionId` opens that session.
  const sessionId = options.sessionId;
  const first = useRef(true);
  useEffect(() => {
    if (first.current) {
      first.current = false;
      return;
    }
    controller.open(sessionId ?? null);
  }, [controller, sessionId]);
  return controller;
}

/**
 * A workflow session: `useWorkflow("chat", { api: "http://127.0.0.1:8080" })`, or
 * `useWorkflow({ api, workflow, sessionId })`, or `useWorkflow()` inside a
 * {@link WorkflowProvider}.
 */
export function useWorkflow<State = unknown>(
  workflowOrOptions?: string | WorkflowOptions,
  maybeOptions?: Omit<WorkflowOptions, "workflow">,
): UseWorkflowResult<State> {
  const shared = useContext(WorkflowContext) as WorkflowController<State> | null;
  const options: WorkflowOptions | null =
    typeof workflowOrOptions === "string"
      ? { ...(maybeOptions ?? { api: "" }), workflow: workflowOrOptions }
      : (workflowOrOptions ?? null);
  if (!options && !shared) {
    throw new Error("useWorkflow: give options ({ api, workflow }) or render inside a <WorkflowProvider>");
  }
  // Hooks run unconditionally: an own controller exists even when the shared one is used.
  const own = useController<State>(options ?? { api: shared?.client ?? "" });
  const controller = options ? own : shared!;
  const snapshot = useSyncExternalStore(controller.subscribe, controller.getSnapshot, controller.getSnapshot);
  return useMemo(() => {
    const send = controller.send;
    return {
      messages: snapshot.messages,
      input: snapshot.input,
      setInput: controller.setInput,
      handleSubmit: (event?: { preventDefault?: () => void }) => {
        event?.preventDefault?.();
        const text = controller.getSnapshot().input;
        if (text.trim() === "") return;
        void send(text);
      },
      isLoading: snapshot.status === "submitted" || snapshot.status === "streaming",
      error: snapshot.error,
      status: snapshot.status,
      sendMessage: (message: string | { text: string }) => send(typeof message === "string" ? message : message.text),
      stop: controller.stop,
      events: snapshot.events,
      state: snapshot.state,
      tape: {
        ...snapshot.tape,
        rewind: controller.rewind,
        step: controller.step,
        stepBack: controller.stepBack,
        stepTo: controller.stepTo,
        play: controller.play,
        playTo: controller.playTo,
        pause: controller.pause,
      },
      sessionId: snapshot.sessionId,
      sessionStatus: snapshot.sessionStatus,
      connection: snapshot.connection,
      pendingRequest: snapshot.pendingRequest,
      respond: controller.respond,
      reconnect: controller.reconnect,
      openSession: controller.open,
      controller,
    };
  }, [controller, snapshot]);
}
