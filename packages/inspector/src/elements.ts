// The page's elements the inspector reads and fills, looked up once by id (index.html holds
// them); a missing one is an error at start, not a silent no-op later.

/** The inspector's elements, each with the type its use needs. */
export type PageElements = ReturnType<typeof pageElements>;

/** Looks up every element the inspector uses. */
export function pageElements() {
  return {
    sessions: byId("sessions"),
    sessionSearch: byId("session-search") as HTMLInputElement,
    sessionStatus: byId("session-status") as HTMLSelectElement,
    sessionWorkflow: byId("session-workflow") as HTMLSelectElement,
    sessionSort: byId("session-sort") as HTMLSelectElement,
    sessionList: byId("session-list"),
    sessionCount: byId("session-count"),
    sessionMore: byId("session-more") as HTMLButtonElement,
    title: byId("title"),
    meta: byId("meta"),
    scroller: byId("timeline"),
    spacer: byId("spacer"),
    rows: byId("rows"),
    event: byId("event"),
    patch: byId("patch"),
    state: byId("state"),
    status: byId("status"),
    search: byId("search") as HTMLInputElement,
    matches: byId("matches"),
    goto: byId("goto") as HTMLInputElement,
    follow: byId("follow") as HTMLButtonElement,
    compact: byId("compact") as HTMLButtonElement,
    fork: byId("fork") as HTMLButtonElement,
    cancel: byId("cancel") as HTMLButtonElement,
    download: byId("download") as HTMLButtonElement,
    question: byId("question"),
    inputForm: byId("input-form") as HTMLFormElement,
    input: byId("input") as HTMLInputElement,
    inputHint: byId("input-hint"),
    keyDialog: byId("key-dialog") as HTMLDialogElement,
    keyForm: byId("key-form") as HTMLFormElement,
    key: byId("key") as HTMLInputElement,
    help: byId("help") as HTMLDialogElement,
    error: byId("error"),
    tabs: document.querySelector<HTMLElement>(".tabs")!,
    chat: byId("chat"),
    forks: byId("forks"),
    compare: byId("compare"),
    lineage: byId("lineage"),
    forkForm: byId("fork-form") as HTMLFormElement,
    forkAt: byId("fork-at") as HTMLInputElement,
    forkInput: byId("fork-input") as HTMLInputElement,
    forkAnswer: byId("fork-answer") as HTMLInputElement,
    forkState: byId("fork-state") as HTMLTextAreaElement,
    forkProvider: byId("fork-provider") as HTMLSelectElement,
    forkError: byId("fork-error"),
    experimentsButton: byId("experiments-button"),
    experimentsDialog: byId("experiments-dialog") as HTMLDialogElement,
    experimentList: byId("experiment-list"),
    experiment: byId("experiment"),
  };
}

/** The element with `id`; throws when the page has none. */
export function byId(id: string): HTMLElement {
  const element = document.getElementById(id);
  if (!element) throw new Error(`the page has no #${id}`);
  return element;
}
