// The top figures with their change against the comparison period; each one picks the chart's
// metric.

import type { JSX } from "preact";
import { useQuery } from "./context";
import { dayLabel } from "./dates";
import { duration, exactNum, num, percentValue } from "./format";
import { setView, type Metric } from "./state";
import type { Aggregate } from "./types";

interface StatDef {
  key: Metric;
  label: string;
  show: (a: Aggregate) => string;
  exact: (a: Aggregate) => string;
  raw: (a: Aggregate) => number;
  /** "pp": change in percentage points; "rel": relative change. */
  change: "pp" | "rel";
  /** Whether a rise is good news. */
  upIsGood: boolean;
}

export const STATS: StatDef[] = [
  {
    key: "visitors",
    label: "Unique visitors",
    show: (a) => num(a.visitors),
    exact: (a) => String(a.visitors),
    raw: (a) => a.visitors,
    change: "rel",
    upIsGood: true,
  },
  {
    key: "sessions",
    label: "Visits",
    show: (a) => num(a.sessions),
    exact: (a) => String(a.sessions),
    raw: (a) => a.sessions,
    change: "rel",
    upIsGood: true,
  },
  {
    key: "pageviews",
    label: "Page views",
    show: (a) => num(a.pageviews),
    exact: (a) => String(a.pageviews),
    raw: (a) => a.pageviews,
    change: "rel",
    upIsGood: true,
  },
  {
    key: "bounceRate",
    label: "Bounce rate",
    show: (a) => a.bounceRate,
    exact: (a) => a.bounceRate,
    raw: (a) => percentValue(a.bounceRate),
    change: "pp",
    upIsGood: false,
  },
  {
    key: "avgSessionDuration",
    label: "Visit duration",
    show: (a) => duration(a.avgSessionDuration),
    exact: (a) => String(a.avgSessionDuration),
    raw: (a) => a.avgSessionDuration,
    change: "rel",
    upIsGood: true,
  },
  {
    key: "events",
    label: "Events",
    show: (a) => num(a.events),
    exact: (a) => String(a.events),
    raw: (a) => a.events,
    change: "rel",
    upIsGood: true,
  },
];

function Change(props: { def: StatDef; now: Aggregate; before: Aggregate }): JSX.Element {
  const { def, now, before } = props;
  const a = def.raw(now);
  const b = def.raw(before);
  let text: string;
  let delta: number;
  if (def.change === "pp") {
    delta = a - b;
    text = `${Math.abs(delta).toFixed(1)} pp`;
  } else if (b === 0) {
    delta = a;
    text = a === 0 ? "0%" : "new";
  } else {
    delta = ((a - b) / b) * 100;
    text = `${Math.abs(Math.round(delta))}%`;
  }
  const rounded = def.change === "pp" ? Math.round(delta * 10) : Math.round(delta);
  const dir = rounded > 0 ? "up" : rounded < 0 ? "down" : "flat";
  const good = dir === "flat" ? "flat" : (dir === "up") === def.upIsGood ? "good" : "bad";
  const arrow = dir === "up" ? "↑" : dir === "down" ? "↓" : "=";
  const words = dir === "up" ? "up" : dir === "down" ? "down" : "unchanged";
  return (
    <span class={`change ${good}`} data-testid={`change-${def.key}`}>
      <span aria-hidden="true">{arrow} </span>
      <span class="sr-only">{words} </span>
      {dir === "flat" ? "" : text}
      <span class="sr-only"> from {def.show(before)} in the comparison period</span>
    </span>
  );
}

export function TopStats(props: { loading: boolean }): JSX.Element {
  const { metrics, view } = useQuery();
  const compare = metrics?.compare;
  return (
    <section class="card stats" aria-label="Top figures" aria-busy={props.loading}>
      <ul class="stat-list">
        {STATS.map((def) => {
          const selected = view.metric === def.key;
          return (
            <li key={def.key}>
              <button
                type="button"
                class={selected ? "stat selected" : "stat"}
                aria-pressed={selected}
                data-testid={`stat-${def.key}`}
                data-value={metrics ? def.exact(metrics) : ""}
                title={
                  metrics && def.change === "rel" && def.key !== "avgSessionDuration"
                    ? exactNum(def.raw(metrics))
                    : undefined
                }
                onClick={() => setView({ metric: def.key }, true)}
              >
                <span class="stat-label">{def.label}</span>
                <span class="stat-value">{metrics ? def.show(metrics) : "–"}</span>
                {metrics && compare ? <Change def={def} now={metrics} before={compare} /> : null}
              </button>
            </li>
          );
        })}
      </ul>
      {compare && (
        <p class="compare-note">
          Compared with {dayLabel(compare.from, true)}
          {compare.to !== compare.from ? ` – ${dayLabel(compare.to, true)}` : ""}
        </p>
      )}
    </section>
  );
}
