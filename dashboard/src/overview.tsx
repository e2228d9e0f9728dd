// "All projects": every project the signed-in person (or the admin token) may read, in one
// table sortable by each column, with totals and the change against the previous period, and
// the projects' series summed (GET /overview, GET /overview/timeseries). Each project is read
// in its own time zone over the same local days; each row links to that project's dashboard.

import type { JSX } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import type { Api, Params } from "./api";
import {
  AnnotationMarkers,
  notesByPoint,
  ProjectNotesList,
  useProjectsAnnotations,
  type ProjectNote,
} from "./annotations";
import { TimeAxisLabels } from "./chart";
import { useLoad } from "./context";
import { defaultInterval, rangeLabel, rangeOf, timeLabel, type Range } from "./dates";
import { duration, num, percentValue } from "./format";
import { setView, useView, writeView } from "./state";
import { Note, Skeleton } from "./ui";

/** The view's `project` that shows every project. */
export const ALL_PROJECTS = "all";

type Figure = "visitors" | "visits" | "pageviews" | "bounceRate" | "visitDuration";
type SortKey = "name" | Figure;

interface Figures {
  visitors: number;
  visits: number;
  pageviews: number;
  bounceRate: string;
  visitDuration: number;
}

interface Totals extends Figures {
  previous: Figures;
  change: Record<Figure, number | null>;
}

interface Row extends Totals {
  id: string;
  name: string;
  timezone: string;
  from: string;
  to: string;
}

interface OverviewAnswer {
  sort: string;
  projects: Row[];
  totals: Totals;
}

interface SeriesPoint extends Figures {
  time: string;
}

interface SeriesAnswer {
  interval: string;
  points: SeriesPoint[];
  projects: { id: string; name: string; timezone: string; points: SeriesPoint[] }[];
}

const COLUMNS: { key: Figure; label: string; show: (r: Figures) => string; upIsBad?: boolean }[] = [
  { key: "visitors", label: "Visitors", show: (r) => num(r.visitors) },
  { key: "visits", label: "Visits", show: (r) => num(r.visits) },
  { key: "pageviews", label: "Page views", show: (r) => num(r.pageviews) },
  { key: "bounceRate", label: "Bounce rate", show: (r) => r.bounceRate, upIsBad: true },
  { key: "visitDuration", label: "Visit duration", show: (r) => duration(r.visitDuration) },
];

function sortValue(r: Row, key: SortKey): number | string {
  if (key === "name") return r.name;
  return key === "bounceRate" ? percentValue(r.bounceRate) : r[key];
}

/** The rows ordered as GET /overview's `sort` orders them: by the key, ties by name then id. */
export function sorted(rows: Row[], key: SortKey, descending: boolean): Row[] {
  const byName = [...rows].sort((a, b) =>
    a.name < b.name ? -1 : a.name > b.name ? 1 : a.id < b.id ? -1 : 1,
  );
  const dir = descending ? -1 : 1;
  return byName
    .map((r, i) => ({ r, i }))
    .sort((a, b) => {
      const x = sortValue(a.r, key);
      const y = sortValue(b.r, key);
      return x < y ? -dir : x > y ? dir : a.i - b.i;
    })
    .map((e) => e.r);
}

/** A figure's change: an arrow and the number, named for screen readers. */
function Delta(props: { change: number | null; pp: boolean; upIsBad?: boolean }): JSX.Element {
  const c = props.change;
  if (c === null) {
    return (
      <span class="delta change flat" data-testid="change" data-change="">
        <span aria-hidden="true">–</span>
        <span class="sr-only"> nothing to compare with in the previous period</span>
      </span>
    );
  }
  const unit = props.pp ? " pp" : "%";
  const size = Math.abs(c);
  const label = `${c > 0 ? "+" : c < 0 ? "-" : ""}${size.toFixed(1)}${unit} against the previous period`;
  const mood = c === 0 ? "flat" : c > 0 !== !!props.upIsBad ? "good" : "bad";
  return (
    <span class={`delta change ${mood}`} data-testid="change" data-change={c} title={label}>
      <span aria-hidden="true">
        {c > 0 ? "↑" : c < 0 ? "↓" : ""}
        {size >= 100 ? Math.round(size) : size.toFixed(1)}
        {unit}
      </span>
      <span class="sr-only"> {label}</span>
    </span>
  );
}

function Cells(props: { row: Totals }): JSX.Element {
  return (
    <>
      {COLUMNS.map((c) => (
        <td key={c.key} class="num" data-testid={`cell-${c.key}`} data-value={String(props.row[c.key])}>
          <span class="value">{c.show(props.row)}</span>{" "}
          <Delta change={props.row.change[c.key]} pp={c.key === "bounceRate"} upIsBad={c.upIsBad} />
        </td>
      ))}
    </>
  );
}

function SortHeader(props: {
  label: string;
  col: SortKey;
  sort: { key: SortKey; desc: boolean };
  onSort: (key: SortKey) => void;
  numeric: boolean;
}): JSX.Element {
  const active = props.sort.key === props.col;
  const dir = active ? (props.sort.desc ? "descending" : "ascending") : undefined;
  return (
    <th scope="col" class={props.numeric ? "num" : ""} aria-sort={dir ?? "none"}>
      <button
        type="button"
        class="sort"
        data-testid={`sort-${props.col}`}
        onClick={() => props.onSort(props.col)}
      >
        {props.label}
        <span aria-hidden="true">{active ? (props.sort.desc ? " ↓" : " ↑") : ""}</span>
      </button>
    </th>
  );
}

function ProjectsTable(props: { data: OverviewAnswer; range: Range }): JSX.Element {
  const [sort, setSort] = useState<{ key: SortKey; desc: boolean }>({ key: "visitors", desc: true });
  const view = useView();
  const rows = sorted(props.data.projects, sort.key, sort.desc);
  const onSort = (key: SortKey) =>
    setSort((s) => (s.key === key ? { key, desc: !s.desc } : { key, desc: key !== "name" }));
  const sortLabel = sort.key === "name" ? "project" : (COLUMNS.find((c) => c.key === sort.key)?.label ?? "");
  return (
    <div class="table-wrap">
      <table data-testid="overview-table">
        <caption class="sr-only">
          Every project, {rangeLabel(props.range)}, sorted by {sortLabel.toLowerCase()},{" "}
          {sort.desc ? "descending" : "ascending"}; changes against the previous period
        </caption>
        <thead>
          <tr>
            <SortHeader label="Project" col="name" sort={sort} onSort={onSort} numeric={false} />
            {COLUMNS.map((c) => (
              <SortHeader key={c.key} label={c.label} col={c.key} sort={sort} onSort={onSort} numeric />
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={r.id} data-testid="overview-row" data-project={r.id}>
              <th scope="row">
                <a
                  href={location.pathname + writeView({ ...view, project: r.id })}
                  onClick={(e) => {
                    if (e.ctrlKey || e.metaKey || e.shiftKey) return;
                    e.preventDefault();
                    setView({ project: r.id });
                  }}
                >
                  {r.name}
                </a>{" "}
                <small class="muted">{r.timezone}</small>
              </th>
              <Cells row={r} />
            </tr>
          ))}
        </tbody>
        <tfoot>
          <tr data-testid="overview-totals">
            <th scope="row">Total ({rows.length} projects)</th>
            <Cells row={props.data.totals} />
          </tr>
        </tfoot>
      </table>
    </div>
  );
}

function SummedChart(props: { data: SeriesAnswer; range: Range; notes: ProjectNote[] }): JSX.Element {
  const box = useRef<HTMLDivElement>(null);
  const [width, setWidth] = useState(800);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const measure = () => setWidth(Math.max(240, el.clientWidth - 16));
    const ro = new ResizeObserver(measure);
    ro.observe(el);
    measure();
    return () => ro.disconnect();
  }, []);
  const points = props.data.points;
  const interval = props.data.interval;
  const n = points.length;
  const height = width < 520 ? 190 : 230;
  const pad = { left: 46, right: 14, top: 14, bottom: 28 };
  const w = width - pad.left - pad.right;
  const h = height - pad.top - pad.bottom;
  const max = Math.max(4, ...points.map((p) => p.visitors));
  const top = Math.ceil(max / 4) * 4;
  const ticks = [0, 1, 2, 3, 4].map((i) => (i * top) / 4);
  const x = (i: number) => pad.left + (n <= 1 ? w / 2 : (i * w) / (n - 1));
  const y = (v: number) => pad.top + h - (v / top) * h;
  const d = points.map((p, i) => `${i ? "L" : "M"}${x(i).toFixed(1)} ${y(p.visitors).toFixed(1)}`).join("");
  const every = Math.max(1, Math.ceil(n / Math.max(2, Math.floor(w / 84))));
  const multiDay = props.range.from !== props.range.to;
  const total = points.reduce((s, p) => s + p.visitors, 0);
  const marks = notesByPoint(
    props.notes,
    points.map((p) => p.time),
    interval,
    "UTC",
  );
  return (
    <>
      <div ref={box} class="chart">
        <svg
          width={width}
          height={height}
          viewBox={`0 0 ${width} ${height}`}
          role="img"
          aria-label={`Visitors of every project summed, by ${interval}: ${num(total)} in all. The same numbers are in the table below.`}
        >
          {ticks.map((t) => (
            <g key={t}>
              <line class="grid-line" x1={pad.left} x2={width - pad.right} y1={y(t)} y2={y(t)} />
              <text class="axis" x={pad.left - 8} y={y(t) + 4} text-anchor="end">
                {num(t)}
              </text>
            </g>
          ))}
          <TimeAxisLabels
            times={points.map((p) => p.time)}
            every={every}
            x={x}
            y={height - 8}
            label={(t) => timeLabel(t, interval, false)}
          />
          <AnnotationMarkers notes={marks} x={x} top={pad.top} bottom={pad.top + h} />
          <path class="line" d={d} />
        </svg>
      </div>
      <ProjectNotesList notes={props.notes} range={props.range} />
      <details class="chart-table">
        <summary>Show as a table</summary>
        <div class="table-wrap">
          <table data-testid="overview-series">
            <caption class="sr-only">Every project summed, by {interval}</caption>
            <thead>
              <tr>
                <th scope="col">Time</th>
                {COLUMNS.map((c) => (
                  <th key={c.key} scope="col" class="num">
                    {c.label}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {points.map((p) => (
                <tr key={p.time}>
                  <th scope="row">{timeLabel(p.time, interval, multiDay)}</th>
                  {COLUMNS.map((c) => (
                    <td key={c.key} class="num">
                      {c.show(p)}
                    </td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </details>
    </>
  );
}

/**
 * The "All projects" page: the top bar and date control are the app's (passed in), the range
 * is the view's period ending `today`, and the table and chart read every project at once.
 */
export function Overview(props: {
  api: Api;
  today: string;
  topbar: JSX.Element;
  dateControl: JSX.Element;
}): JSX.Element {
  const view = useView();
  const range = rangeOf(view.period, props.today, { from: view.from, to: view.to });
  const params: Params = [
    ["from", range.from],
    ["to", range.to],
  ];
  const interval = defaultInterval(range, view.period);
  const table = useLoad<OverviewAnswer>(props.api, 0, "/overview", params);
  const series = useLoad<SeriesAnswer>(props.api, 0, "/overview/timeseries", [
    ...params,
    ["interval", interval],
  ]);
  const notes = useProjectsAnnotations(props.api, series.data?.projects ?? [], range);
  useEffect(() => {
    document.title = "All projects · svc";
  }, []);
  return (
    <>
      <a class="skip" href="#main">
        Skip to the statistics
      </a>
      <header class="top">
        <div class="topbar">{props.topbar}</div>
      </header>
      <div class="controls" role="region" aria-label="Date range">
        <div class="controls-inner">
          {props.dateControl}
          <span class="tz" data-testid="range" data-from={range.from} data-to={range.to}>
            {rangeLabel(range)} · each project in its own time zone
          </span>
        </div>
      </div>
      <main id="main" tabIndex={-1}>
        <section class="card" aria-labelledby="overview-title">
          <div class="card-head">
            <h2 id="overview-title">All projects</h2>
          </div>
          {table.error ? (
            <Note error={table.error} />
          ) : !table.data ? (
            <Skeleton rows={4} />
          ) : (
            <ProjectsTable data={table.data} range={range} />
          )}
        </section>
        <section class="card chart-card" aria-labelledby="overview-chart-title">
          <div class="card-head">
            <h2 id="overview-chart-title">Visitors, every project summed</h2>
          </div>
          {series.error ? (
            <Note error={series.error} />
          ) : !series.data ? (
            <Skeleton rows={4} />
          ) : (
            <SummedChart data={series.data} range={range} notes={notes} />
          )}
        </section>
      </main>
      <footer class="foot">svc · cookie-free analytics · each project's days in its own time zone</footer>
    </>
  );
}
