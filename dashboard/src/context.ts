// What every panel needs to ask the API about the current view.

import { createContext } from "preact";
import { useContext, useEffect, useRef, useState } from "preact/hooks";
import { ApiError, type Api, type Params } from "./api";
import type { Interval, Range } from "./dates";
import type { View } from "./state";
import type { MetricsAnswer, Project } from "./types";

export interface Ctx {
  api: Api;
  project: Project;
  range: Range;
  interval: Interval;
  view: View;
  /** from, to, filters (and projectId for the admin token). */
  base: Params;
  /** Bumped to refresh every panel. */
  tick: number;
  readOnly: boolean;
  metrics: MetricsAnswer | null;
}

export const Query = createContext<Ctx | null>(null);

export function useQuery(): Ctx {
  const q = useContext(Query);
  if (!q) throw new Error("no query context");
  return q;
}

export function scoped(api: Api, project: Project, params: Params): Params {
  // The admin token and an account's session reach several projects: they name the one read.
  return api.kind === "admin" || api.kind === "session" ? [["projectId", project.id], ...params] : params;
}

export interface Loaded<T> {
  data: T | null;
  error: ApiError | null;
  loading: boolean;
}

/** GET path?params whenever they (or the refresh tick) change; null path: nothing to load. */
export function useData<T>(path: string | null, params: Params, extra = ""): Loaded<T> {
  const { api, tick } = useQuery();
  return useLoad<T>(api, tick, path, params, extra);
}

export function useLoad<T>(
  api: Api,
  tick: number,
  path: string | null,
  params: Params,
  extra = "",
): Loaded<T> {
  const key = path ? `${api.url(path, params)}#${tick}#${extra}` : "";
  const [state, setState] = useState<Loaded<T>>({ data: null, error: null, loading: !!path });
  const latest = useRef("");
  useEffect(() => {
    latest.current = key;
    if (!path) {
      setState({ data: null, error: null, loading: false });
      return;
    }
    setState((s) => ({ ...s, loading: true }));
    api.get<T>(path, params).then(
      (data) => {
        if (latest.current === key) setState({ data, error: null, loading: false });
      },
      (e: unknown) => {
        if (latest.current !== key) return;
        const error = e instanceof ApiError ? e : new ApiError(0, "client", String(e));
        setState({ data: null, error, loading: false });
      },
    );
  }, [key]);
  return state;
}
