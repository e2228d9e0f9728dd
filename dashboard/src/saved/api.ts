// A project's saved goals, funnels, segments and annotations (docs/api.md, "Saved goals,
// funnels, segments and annotations"): their shapes, a loader that reloads after a write, and
// who may change what.

import { useEffect, useState } from "preact/hooks";
import { may } from "../accounts";
import { ApiError, type Api } from "../api";
import type { Ctx } from "../context";

export interface SavedGoal {
  id: string;
  name: string;
  kind: "event" | "page";
  event?: string;
  page?: string;
  property?: { key: string; value: string };
  goal: string;
}

export interface SavedFunnel {
  id: string;
  name: string;
  steps: string[];
  window?: number;
}

export interface Segment {
  id: string;
  name: string;
  filters: string[];
  shared: boolean;
  ownerId: string | null;
}

export interface Annotation {
  id: string;
  date: string;
  day: string;
  text: string;
  createdBy: string;
}

export type Kind = "goals" | "funnels" | "segments" | "annotations";

/** The path of a project's saved things of `kind`, or of one of them. */
export function savedPath(projectId: string, kind: Kind, id?: string): string {
  const base = `/projects/${encodeURIComponent(projectId)}/${kind}`;
  return id ? `${base}/${encodeURIComponent(id)}` : base;
}

/** Whether the credential may write goals, funnels, annotations and shared segments: the
 * `edit` right (an owner, admin or editor; a project's secret key; the admin token). A share
 * link and a viewer or guest may not. The server checks again. */
export function canEdit(ctx: Pick<Ctx, "api" | "project" | "readOnly">): boolean {
  if (ctx.readOnly || ctx.api.kind === "share") return false;
  return ctx.api.kind !== "session" || may(ctx.project.role, "edit");
}

/** Whether the credential may keep personal segments: an account's session only. */
export function canKeepPersonal(ctx: Pick<Ctx, "api" | "readOnly">): boolean {
  return !ctx.readOnly && ctx.api.kind === "session";
}

export function errorText(e: unknown): string {
  return e instanceof ApiError ? e.message : String(e);
}

export interface SavedList<T> {
  items: T[] | null;
  error: string;
  /** Reads the list again (after a write). */
  reload: () => void;
}

// Lists are shared by every component of the page that shows them (the panel and its
// screen); a write reloads every copy.
const listeners = new Map<string, Set<() => void>>();

function listen(key: string, l: () => void): () => void {
  const set = listeners.get(key) ?? new Set();
  set.add(l);
  listeners.set(key, set);
  return () => {
    set.delete(l);
    if (set.size === 0) listeners.delete(key);
  };
}

/** After a write: forgets the reads the API client keeps a few seconds (the figures of the
 * saved goals and funnels change with them) and tells every list and figure of the project's
 * `kind` to read again. */
export function changed(api: Api, projectId: string, kind: Kind): void {
  api.clear();
  const prefix = savedPath(projectId, kind);
  for (const [k, ls] of listeners) if (k.startsWith(prefix)) for (const l of ls) l();
}

/** A number that grows at each `changed(projectId, kind)`: a read that depends on the saved
 * things (GET /metrics/goals without `goal`) passes it as its `extra` key. */
export function useVersion(projectId: string, kind: Kind): number {
  const [n, setN] = useState(0);
  useEffect(() => listen(savedPath(projectId, kind), () => setN((x) => x + 1)), [projectId, kind]);
  return n;
}

/** GET the project's saved `kind` (`query`: the annotations' range), read again after
 * `changed(projectId, kind)`. A server without the routes (404): an empty list. */
export function useSaved<T>(
  api: Api,
  projectId: string,
  kind: Kind,
  query = "",
  enabled = true,
): SavedList<T> {
  const [items, setItems] = useState<T[] | null>(null);
  const [error, setError] = useState("");
  const [n, setN] = useState(0);
  const key = `${savedPath(projectId, kind)}${query ? `?${query}` : ""}`;
  useEffect(() => (enabled ? listen(key, () => setN((x) => x + 1)) : undefined), [key, enabled]);
  useEffect(() => {
    if (!enabled) {
      setItems(null);
      return;
    }
    let live = true;
    api.send<Record<string, unknown>>("GET", key).then(
      (r) => {
        if (!live) return;
        setItems((r[kind] as T[] | undefined) ?? []);
        setError("");
      },
      (e: unknown) => {
        if (!live) return;
        if (e instanceof ApiError && e.status === 404) setItems([]);
        else setError(errorText(e));
      },
    );
    return () => {
      live = false;
    };
  }, [key, n, enabled]);
  return { items, error, reload: () => setN((x) => x + 1) };
}
