// The server as the inspector reaches it: one `@openharness/client` whose base is the directory
// the page is served from (so the API is found under any mount prefix, such as `/harness/`),
// and whose API key is the one the user gave, kept in the tab's sessionStorage and read on
// every request (the page asks for it after a 401 and keeps the same client).

import { OpenHarnessClient, OpenHarnessError } from "@openharness/client";
import { mountBase } from "./view";

const KEY_STORAGE = "openharness.inspector.key";

export class Server {
  readonly client: OpenHarnessClient;
  private key: string | null = readKey();

  constructor(baseURI: string) {
    this.client = new OpenHarnessClient({ baseUrl: mountBase(baseURI), apiKey: () => this.key });
  }

  setKey(key: string | null): void {
    this.key = key && key.trim() !== "" ? key.trim() : null;
    try {
      if (this.key) sessionStorage.setItem(KEY_STORAGE, this.key);
      else sessionStorage.removeItem(KEY_STORAGE);
    } catch {
      // Storage may be unavailable (private mode): the key lasts as long as the page.
    }
  }
}

/** Whether the server refused for want of a (right) key. */
export function unauthorized(error: unknown): boolean {
  return error instanceof OpenHarnessError && error.status === 401;
}

/** An error as the page shows it: the server's code and message when it answered one. */
export function describeError(error: unknown): string {
  if (error instanceof OpenHarnessError) return `${error.code}: ${error.message}`;
  return error instanceof Error ? error.message : String(error);
}

function readKey(): string | null {
  try {
    return sessionStorage.getItem(KEY_STORAGE);
  } catch {
    return null;
  }
}
