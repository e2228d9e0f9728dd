// The time series: a hand-drawn SVG line (and the comparison period dashed), with a pointer
// and keyboard readout and the same numbers as a table.

import type { JSX } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import {
  AnnotationList,
  AnnotationMarkers,
  dayOfPoint,
  notesByPoint,
  notesReadout,
  useAnnotations,
} from "./annotations";
import type { Params } from "./api";
import { useData, useQuery } from "./context";
import { dayLabel, intervalsFor, nowHourIn, timeLabel, todayIn, type Interval } from "./dates";
import { duration, num, percentValue } from "./format";
import { setView, type Metric } from "./state";
import { STATS } from "./stats";
import type { Point, TimeseriesAnswer } from "./types";
import { canEdit } from "./saved/api";
import { Note, Skeleton, Field } from "./ui";

const INTERVAL_LABELS: Record<Interval, string> = {
  hour: "Hours",
  day: "Days",
  week: "Weeks",
  month: "Months",
};

function valueOf(p: Point | undefined, metric: Metric): number | null {
  if (!p) return null;
  const v = p[metric];
  if (v === undefined || v === null) return null;
  return metric === "bounceRate" ? percentValue(v) : Number(v);
}

function show(v: number | null, metric: Metric): string {
  if (v === null) return "–";
  if (metric === "bounceRate") return `${v.toFixed(1)}%`;
  if (metric === "avgSessionDuration") return duration(v);
  return num(v);
}

function niceStep(raw: number): number {
  if (raw <= 0) return 1;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const f = raw / mag;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10) * mag;
}

/** `base` with another range (the comparison period). */
export function withRange(base: Params, from: string, to: string): Params {
  return base.map(([k, v]) => [k, k === "from" ? from : k === "to" ? to : v] as [string, string]);
}

/** The labels under a time chart: every ``every``-th point's, the first and the last aligned
 * with the chart's ends so they stay inside it. */
export function TimeAxisLabels(props: {
  times: string[];
  every: number;
  x: (i: number) => number;
  y: number;
  label: (time: string) => string;
}): JSX.Element {
  const n = props.times.length;
  return (
    <>
      {props.times.map((time, i) =>
        i % props.every === 0 ? (
          <text
            key={time}
            class="axis"
            x={props.x(i)}
            y={props.y}
            text-anchor={n > 1 && i === 0 ? "start" : n > 1 && i === n - 1 ? "end" : "middle"}
          >
            {props.label(time)}
          </text>
        ) : null,
      )}
    </>
  );
}

export function Chart(): JSX.Element | null {
  const ctx = useQuery();
  const { base, interval, view, metrics, range, project } = ctx;
  const notes = useAnnotations();
  const [noteDay, setNoteDay] = useState<string | null>(null);
  const editable = canEdit(ctx);
  const ts = useData<TimeseriesAnswer>("/metrics/timeseries", [...base, ["interval", interval]]);
  const cmp = view.compare !== "off" ? metrics?.compare : undefined;
  const prev = useData<TimeseriesAnswer>(
    cmp ? "/metrics/timeseries" : null,
    cmp ? [...withRange(base, cmp.from, cmp.to), ["interval", interval]] : [],
  );
  const wrap = useRef<HTMLDivElement>(null);
  const [width, setWidth] = useState(800);
  const [active, setActive] = useState<number | null>(null);

  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const measure = () => setWidth(Math.max(240, el.clientWidth - 16));
    const ro = new ResizeObserver(measure);
    ro.observe(el);
    measure();
    return () => ro.disconnect();
  }, [ts.error?.missing]);

  if (ts.error?.missing) return null;

  const points = ts.data?.points ?? [];
  const prevPoints = cmp ? (prev.data?.points ?? []) : [];
  // Until its series arrives (after the top figures), the chart is titled by the chosen figure.
  const available =
    !ts.data || STATS.some((s) => s.key === view.metric && points[0] && valueOf(points[0], s.key) !== null);
  const metric: Metric = available ? view.metric : "visitors";
  const label = STATS.find((s) => s.key === metric)?.label ?? metric;
  const intervals = intervalsFor(range);
  const multiDay = range.from !== range.to;

  const height = width < 520 ? 190 : 250;
  const pad = { left: 46, right: 14, top: 14, bottom: 28 };
  const w = width - pad.left - pad.right;
  const h = height - pad.top - pad.bottom;
  const values = points.map((p) => valueOf(p, metric) ?? 0);
  const prevValues = prevPoints.map((p) => valueOf(p, metric) ?? 0);
  const max = Math.max(0, ...values, ...prevValues.slice(0, values.length));
  const counts = metric !== "bounceRate" && metric !== "avgSessionDuration";
  const step = counts ? Math.max(1, Math.ceil(niceStep(max / 4 || 1))) : niceStep(max / 4 || 1);
  const top = Math.max(step * 4, step * Math.ceil(max / step));
  const ticks = Array.from({ length: Math.round(top / step) + 1 }, (_, i) => i * step);
  const n = points.length;
  const x = (i: number) => pad.left + (n <= 1 ? w / 2 : (i * w) / (n - 1));
  const y = (v: number) => pad.top + h - (v / top) * h;
  const line = (vs: number[]) =>
    vs
      .slice(0, Math.max(n, 1))
      .map((v, i) => `${i ? "L" : "M"}${x(i).toFixed(1)} ${y(v).toFixed(1)}`)
      .join("");
  // The main line stops at the current hour or day; the comparison runs on.
  const nowKey = interval === "hour" ? nowHourIn(project.timezone) : todayIn(project.timezone);
  const past = Math.max(1, points.filter((p) => p.time <= nowKey).length);
  const main = line(values.slice(0, past));
  const area =
    past > 1 ? `${main}L${x(past - 1).toFixed(1)} ${pad.top + h}L${x(0).toFixed(1)} ${pad.top + h}Z` : "";
  const axisLabel = (time: string) =>
    interval === "hour" && multiDay && time.endsWith("T00:00")
      ? dayLabel(time)
      : timeLabel(time, interval, false);
  const every = Math.max(1, Math.ceil(n / Math.max(2, Math.floor(w / 84))));
  const marks = notesByPoint(
    notes.items ?? [],
    points.map((p) => p.time),
    interval,
    project.timezone,
  );

  const pick = (clientX: number): number | null => {
    const svg = wrap.current?.querySelector("svg");
    if (!svg || n === 0) return null;
    const rect = svg.getBoundingClientRect();
    const px = ((clientX - rect.left) / rect.width) * width;
    const i = Math.min(n - 1, Math.max(0, n <= 1 ? 0 : Math.round(((px - pad.left) / w) * (n - 1))));
    setActive(i);
    return i;
  };

  const onKey = (e: KeyboardEvent) => {
    if (n === 0) return;
    const i = active ?? (e.key === "ArrowLeft" || e.key === "End" ? n : -1);
    let next = i;
    if (e.key === "ArrowRight") next = Math.min(n - 1, i + 1);
    else if (e.key === "ArrowLeft") next = Math.max(0, i - 1);
    else if (e.key === "Home") next = 0;
    else if (e.key === "End") next = n - 1;
    else if (e.key === "Enter" && editable && active !== null) {
      e.preventDefault();
      setNoteDay(dayOfPoint(points[active]!.time));
      return;
    } else if (e.key === "Escape") {
      setActive(null);
      return;
    } else return;
    e.preventDefault();
    setActive(next);
  };

  const a = active !== null && active < n ? active : null;
  const readout =
    a === null
      ? ""
      : `${timeLabel(points[a]!.time, interval, multiDay)}: ${show(a < past ? values[a]! : null, metric)} ${label.toLowerCase()}` +
        (prevPoints[a]
          ? `; comparison ${timeLabel(prevPoints[a]!.time, interval, true)}: ${show(prevValues[a]!, metric)}`
          : "") +
        notesReadout(marks.get(a));
  const total = values.reduce((s, v) => s + v, 0);

  return (
    <section class="card chart-card" aria-labelledby="chart-title">
      <div class="card-head">
        <h2 id="chart-title">
          {label}
          {!available && view.metric !== "visitors" ? (
            <small> (the chosen figure has no time series)</small>
          ) : null}
        </h2>
        {intervals.length > 1 && (
          <Field class="inline" label="Interval">
            {(id) => (
              <>
                <select
                  id={id}
                  value={interval}
                  onChange={(e) => setView({ interval: (e.target as HTMLSelectElement).value as Interval })}
                >
                  {intervals.map((i) => (
                    <option key={i} value={i}>
                      {INTERVAL_LABELS[i]}
                    </option>
                  ))}
                </select>
              </>
            )}
          </Field>
        )}
      </div>
      <div ref={box}>
        {ts.error ? (
          <Note error={ts.error} />
        ) : !ts.data ? (
          <Skeleton rows={4} />
        ) : (
          <div
            class={editable ? "chart notable" : "chart"}
            ref={wrap}
            tabIndex={0}
            role="group"
            aria-label={
              `${label} over time, ${n} ${interval}s. Use the arrow keys to read each ${interval}.` +
              (editable ? ` Enter adds a note to the ${interval} read.` : "")
            }
            aria-describedby="chart-readout"
            onKeyDown={onKey}
            onBlur={() => setActive(null)}
            onPointerMove={(e) => pick(e.clientX)}
            onClick={(e) => {
              const i = editable ? pick(e.clientX) : null;
              if (i !== null) setNoteDay(dayOfPoint(points[i]!.time));
            }}
            onPointerLeave={() => setActive(null)}
          >
            <svg
              width={width}
              height={height}
              viewBox={`0 0 ${width} ${height}`}
              aria-hidden="true"
              class={ts.loading ? "loading" : ""}
            >
              {ticks.map((t) => (
                <g key={t}>
                  <line class="grid-line" x1={pad.left} x2={width - pad.right} y1={y(t)} y2={y(t)} />
                  <text class="axis" x={pad.left - 8} y={y(t) + 4} text-anchor="end">
                    {show(t, metric)}
                  </text>
                </g>
              ))}
              <TimeAxisLabels
                times={points.map((p) => p.time)}
                every={every}
                x={x}
                y={height - 8}
                label={axisLabel}
              />
              <AnnotationMarkers notes={marks} x={x} top={pad.top} bottom={pad.top + h} />
              {prevPoints.length > 0 && <path class="line compare" d={line(prevValues)} />}
              {area && <path class="area" d={area} />}
              <path class="line" d={main} />
              {n === 1 && <circle class="dot" cx={x(0)} cy={y(values[0]!)} r={4} />}
              {a !== null && (
                <g>
                  <line class="cursor" x1={x(a)} x2={x(a)} y1={pad.top} y2={pad.top + h} />
                  {prevPoints[a] && <circle class="dot compare" cx={x(a)} cy={y(prevValues[a]!)} r={4} />}
                  {a < past && <circle class="dot" cx={x(a)} cy={y(values[a]!)} r={4.5} />}
                </g>
              )}
            </svg>
            {a !== null && (
              <div
                class="tooltip"
                style={{
                  left: `${Math.min(Math.max(x(a), 80), width - 80)}px`,
                }}
                aria-hidden="true"
              >
                <div class="tt-time">{timeLabel(points[a]!.time, interval, multiDay)}</div>
                <div class="tt-value">
                  <span class="swatch" /> {show(a < past ? values[a]! : null, metric)}{" "}
                  <span class="muted">{label.toLowerCase()}</span>
                </div>
                {prevPoints[a] && (
                  <div class="tt-value muted">
                    <span class="swatch compare" /> {show(prevValues[a]!, metric)} ·{" "}
                    {timeLabel(prevPoints[a]!.time, interval, true)}
                  </div>
                )}
              </div>
            )}
            <p id="chart-readout" class="sr-only" aria-live="polite">
              {readout}
            </p>
          </div>
        )}
      </div>
      {ts.data && <AnnotationList notes={notes} draft={noteDay} onDraft={setNoteDay} />}
      {ts.data && (
        <details class="chart-table">
          <summary>Show as a table</summary>
          <div class="table-wrap">
            <table>
              <caption class="sr-only">
                {label} by {interval}
              </caption>
              <thead>
                <tr>
                  <th scope="col">Time</th>
                  <th scope="col" class="num">
                    {label}
                  </th>
                  {prevPoints.length > 0 && (
                    <th scope="col" class="num">
                      Comparison
                    </th>
                  )}
                </tr>
              </thead>
              <tbody>
                {points.map((p, i) => (
                  <tr key={p.time}>
                    <th scope="row">{timeLabel(p.time, interval, multiDay)}</th>
                    <td class="num">{show(values[i]!, metric)}</td>
                    {prevPoints.length > 0 && <td class="num">{show(prevValues[i] ?? null, metric)}</td>}
                  </tr>
                ))}
              </tbody>
              {metric !== "bounceRate" && metric !== "avgSessionDuration" && metric !== "visitors" && (
                <tfoot>
                  <tr>
                    <th scope="row">Sum</th>
                    <td class="num">{num(total)}</td>
                    {prevPoints.length > 0 && <td />}
                  </tr>
                </tfoot>
              )}
            </table>
          </div>
        </details>
      )}
    </section>
  );
}
