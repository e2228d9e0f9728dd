// The view lives in the query string, so a view can be reloaded, bookmarked or shared.
// Only values that differ from the defaults are written.

import { useEffect, useState } from "preact/hooks";
import type { Interval, Period } from "./dates";
import { isDay, PERIODS } from "./dates";
import { parseFilter } from "./filters";

export type Compare = "off" | "previous_period" | "previous_year";
export type Metric = "visitors" | "sessions" | "pageviews" | "bounceRate" | "avgSessionDuration" | "events";

export interface View {
  project: string;
  period: Period;
  from: string;
  to: string;
  compare: Compare;
  interval: Interval | "";
  metric: Metric;
  filters: string[];
  goals: string[];
  steps: string[];
  window: string;
  /** A saved funnel's id (issue 41): the funnel panel reads it instead of `steps`. */
  funnel: string;
  /** The saved segment whose filters are applied (issue 41), if any. */
  segment: string;
  tabs: Record<string, string>;
  prop: string;
}

export const DEFAULT_PERIOD: Period = "30d";
const METRICS: Metric[] = ["visitors", "sessions", "pageviews", "bounceRate", "avgSessionDuration", "events"];
const INTERVALS = ["hour", "day", "week", "month"];
export const PANELS = ["sources", "pages", "locations", "devices", "events"];

export function readView(search: string = location.search): View {
  const q = new URLSearchParams(search);
  const period = q.get("period") as Period | null;
  const compare = q.get("compare");
  const interval = q.get("interval") ?? "";
  const metric = q.get("metric") as Metric | null;
  const tabs: Record<string, string> = {};
  for (const p of PANELS) {
    const t = q.get(p);
    if (t) tabs[p] = t;
  }
  const from = q.get("from") ?? "";
  const to = q.get("to") ?? "";
  const custom = period === "custom" || (!period && isDay(from));
  return {
    project: q.get("project") ?? "",
    period: custom ? "custom" : PERIODS.some((p) => p.id === period) ? (period as Period) : DEFAULT_PERIOD,
    from: isDay(from) ? from : "",
    to: isDay(to) ? to : "",
    compare: compare === "previous_period" || compare === "previous_year" ? compare : "off",
    interval: INTERVALS.includes(interval) ? (interval as Interval) : "",
    metric: metric && METRICS.includes(metric) ? metric : "visitors",
    filters: q.getAll("filter").filter((f) => parseFilter(f) !== null),
    goals: q.getAll("goal").filter((g) => /^(event|page):./.test(g)),
    steps: q.getAll("step").filter((g) => /^(event|page):./.test(g)),
    window: /^\d+$/.test(q.get("window") ?? "") ? (q.get("window") as string) : "",
    funnel: q.get("funnel") ?? "",
    segment: q.get("segment") ?? "",
    tabs,
    prop: q.get("prop") ?? "",
  };
}

export function writeView(v: View): string {
  const q = new URLSearchParams();
  if (v.project) q.set("project", v.project);
  if (v.period !== DEFAULT_PERIOD) q.set("period", v.period);
  if (v.period === "custom") {
    if (v.from) q.set("from", v.from);
    if (v.to) q.set("to", v.to);
  }
  if (v.compare !== "off") q.set("compare", v.compare);
  if (v.interval) q.set("interval", v.interval);
  if (v.metric !== "visitors") q.set("metric", v.metric);
  for (const f of v.filters) q.append("filter", f);
  for (const g of v.goals) q.append("goal", g);
  for (const s of v.steps) q.append("step", s);
  if (v.window) q.set("window", v.window);
  if (v.funnel) q.set("funnel", v.funnel);
  if (v.segment) q.set("segment", v.segment);
  for (const p of PANELS) if (v.tabs[p]) q.set(p, v.tabs[p]);
  if (v.prop) q.set("prop", v.prop);
  const s = q.toString();
  return s ? `?${s}` : "";
}

type Listener = (v: View) => void;
const listeners = new Set<Listener>();
let current: View = readView();

window.addEventListener("popstate", () => {
  current = readView();
  for (const l of listeners) l(current);
});

export function getView(): View {
  return current;
}

/** Changes the view; a new history entry unless `replace`. */
export function setView(patch: Partial<View>, replace = false): void {
  current = { ...current, ...patch };
  const url = location.pathname + writeView(current) + location.hash;
  if (url !== location.pathname + location.search + location.hash) {
    if (replace) history.replaceState(null, "", url);
    else history.pushState(null, "", url);
  }
  for (const l of listeners) l(current);
}

export function useView(): View {
  const [v, set] = useState(current);
  useEffect(() => {
    listeners.add(set);
    set(current);
    return () => {
      listeners.delete(set);
    };
  }, []);
  return v;
}
