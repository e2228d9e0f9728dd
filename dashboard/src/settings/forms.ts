// Small helpers of the settings forms.

import { ApiError } from "../api";

/** An error as a form says it: the API's message (which names the field at fault). */
export function errorText(e: unknown): string {
  return e instanceof ApiError ? e.message : String(e);
}

/** The non-empty trimmed lines of a text area. */
export function lines(text: string): string[] {
  return text
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "");
}
