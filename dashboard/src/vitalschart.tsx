// Web Vitals over time: the p75 of one vital per interval as a line (GET /metrics/vitals with
// `interval`), over bands of Google's thresholds (good / needs improvement / poor). A bucket
// without a sample of the vital is a gap in the line, not a zero.

import type { JSX } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { AnnotationMarkers, notesByPoint, useAnnotations } from "./annotations";
import { TimeAxisLabels } from "./chart";
import { useQuery } from "./context";
import { timeLabel } from "./dates";
import { duration, num } from "./format";
import { Tabs } from "./ui";

export interface VitalFigures {
  samples: number;
  p75: number | null;
  good: string;
  needsImprovement: string;
  poor: string;
}

export type VitalName = "lcp" | "inp" | "cls" | "fcp" | "ttfb";

export type VitalsFigures = { samples: number } & Record<VitalName, VitalFigures>;

export type VitalsPoint = VitalsFigures & { time: string };

export interface VitalDef {
  name: VitalName;
  label: string;
  unit: string;
  /** Google's thresholds, as the API counts them (svc.schema.measurements.VITALS): good up
   * to `good`, poor above `poor`. */
  good: number;
  poor: number;
}

export const VITALS: VitalDef[] = [
  { name: "lcp", label: "Largest contentful paint", unit: "ms", good: 2500, poor: 4000 },
  { name: "inp", label: "Interaction to next paint", unit: "ms", good: 200, poor: 500 },
  { name: "cls", label: "Cumulative layout shift", unit: "", good: 0.1, poor: 0.25 },
  { name: "fcp", label: "First contentful paint", unit: "ms", good: 1800, poor: 3000 },
  { name: "ttfb", label: "Time to first byte", unit: "ms", good: 800, poor: 1800 },
];

/** A value of the vital as a person reads it: "2.8s", "180ms" (`duration`), "0.050". */
export function showVital(v: VitalDef, value: number | null): string {
  if (value === null) return "–";
  return v.unit ? duration(value / 1000) : value.toFixed(3);
}

/** The top of the value axis: past the poor threshold and every value, a round number. */
function axisTop(v: VitalDef, values: number[]): number {
  const max = Math.max(v.poor * 1.25, ...values);
  const mag = 10 ** Math.floor(Math.log10(max));
  for (const f of [1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) if (f * mag >= max) return f * mag;
  return 10 * mag;
}

/** The path of `values` on the chart, broken where a value is missing. */
function path(values: (number | null)[], x: (i: number) => number, y: (v: number) => number): string {
  let d = "";
  let pen = false;
  values.forEach((value, i) => {
    if (value === null) {
      pen = false;
      return;
    }
    d += `${pen ? "L" : "M"}${x(i).toFixed(1)} ${y(value).toFixed(1)}`;
    pen = true;
  });
  return d;
}

export function VitalsChart(props: {
  points: VitalsPoint[];
  interval: string;
  multiDay: boolean;
  /** The comparison period's points, drawn dashed bucket by bucket (none: no comparison). */
  compare?: VitalsPoint[] | undefined;
}): JSX.Element {
  const [chosen, setChosen] = useState<VitalName>("lcp");
  const { project } = useQuery();
  const notes = useAnnotations();
  const box = useRef<HTMLDivElement>(null);
  const [width, setWidth] = useState(480);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const measure = () => setWidth(Math.max(240, el.clientWidth));
    const ro = new ResizeObserver(measure);
    ro.observe(el);
    measure();
    return () => ro.disconnect();
  }, []);

  const v = VITALS.find((x) => x.name === chosen) ?? VITALS[0]!;
  const { points, interval } = props;
  const n = points.length;
  const values = points.map((p) => p[chosen].p75);
  const measured = values.filter((x): x is number => x !== null);
  const prevValues = (props.compare ?? []).slice(0, n).map((p) => p[chosen].p75);
  const prevMeasured = prevValues.filter((x): x is number => x !== null);
  const top = axisTop(v, [...measured, ...prevMeasured]);
  const height = 190;
  const pad = { left: 64, right: 12, top: 10, bottom: 26 };
  const w = width - pad.left - pad.right;
  const h = height - pad.top - pad.bottom;
  const x = (i: number) => pad.left + (n <= 1 ? w / 2 : (i * w) / (n - 1));
  const y = (value: number) => pad.top + h - (Math.min(value, top) / top) * h;
  const line = path(values, x, y);
  const prevLine = path(prevValues, x, y);
  const every = Math.max(1, Math.ceil(n / Math.max(2, Math.floor(w / 90))));
  const marks = notesByPoint(
    notes.items ?? [],
    points.map((p) => p.time),
    interval,
    project.timezone,
  );
  const left = pad.left;
  const right = width - pad.right;
  const bands: [string, number, number][] = [
    ["good", 0, v.good],
    ["needs-improvement", v.good, v.poor],
    ["poor", v.poor, top],
  ];
  const summary =
    `${v.label}, p75 by ${interval}: ${measured.length} of ${n} ${interval}s measured; ` +
    `good up to ${showVital(v, v.good)}, poor above ${showVital(v, v.poor)}` +
    (props.compare ? `; the comparison period dashed, ${prevMeasured.length} measured.` : ".");

  return (
    <div class="vitals-chart">
      <Tabs
        label="Web Vital over time"
        tabs={VITALS.map((d) => ({ id: d.name, label: d.name.toUpperCase() }))}
        value={chosen}
        onChange={(id) => setChosen(id as VitalName)}
      />
      <div ref={box}>
        <svg
          width={width}
          height={height}
          viewBox={`0 0 ${width} ${height}`}
          role="img"
          aria-label={summary}
          data-testid="vitals-chart"
          data-chart-vital={chosen}
          data-points={n}
        >
          {bands.map(([cls, low, high]) => (
            <rect
              key={cls}
              class={`vital-band ${cls}`}
              x={left}
              width={right - left}
              y={y(high)}
              height={y(low) - y(high)}
            />
          ))}
          {(["good", "poor"] as const).map((kind) => (
            <g key={kind}>
              <line
                class={`vital-threshold ${kind}`}
                data-threshold={kind}
                data-value={v[kind]}
                x1={left}
                x2={right}
                y1={y(v[kind])}
                y2={y(v[kind])}
              />
              <text class="axis" x={left - 6} y={y(v[kind]) + 4} text-anchor="end">
                {showVital(v, v[kind])}
              </text>
            </g>
          ))}
          <text class="axis" x={left - 6} y={y(0) + 4} text-anchor="end">
            0
          </text>
          <AnnotationMarkers notes={marks} x={x} top={pad.top} bottom={pad.top + h} />
          <TimeAxisLabels
            times={points.map((p) => p.time)}
            every={every}
            x={x}
            y={height - 8}
            label={(time) => timeLabel(time, interval, false)}
          />
          {prevLine && (
            <path
              class="line compare"
              d={prevLine}
              data-testid="vitals-compare"
              data-points={prevMeasured.length}
            />
          )}
          {prevValues.map((value, i) =>
            value === null ? null : (
              <circle key={`c${i}`} class="vital-point compare" cx={x(i)} cy={y(value)} r={3} />
            ),
          )}
          {line && <path class="line" d={line} />}
          {points.map((p, i) => {
            const value = values[i];
            if (value === null || value === undefined) return null;
            return (
              <circle
                key={p.time}
                class="vital-point"
                data-time={p.time}
                data-p75={value}
                cx={x(i)}
                cy={y(value)}
                r={3.5}
              >
                <title>{`${timeLabel(p.time, interval, props.multiDay)}: p75 ${showVital(v, value)} (${num(p[chosen].samples)} page loads)`}</title>
              </circle>
            );
          })}
        </svg>
      </div>
      <details class="chart-table">
        <summary>Show as a table</summary>
        <div class="table-wrap">
          <table>
            <caption class="sr-only">{summary}</caption>
            <thead>
              <tr>
                <th scope="col">Time</th>
                <th scope="col" class="num">
                  p75
                </th>
                <th scope="col" class="num">
                  Page loads
                </th>
                {props.compare && (
                  <th scope="col" class="num">
                    Comparison p75
                  </th>
                )}
              </tr>
            </thead>
            <tbody>
              {points.map((p, i) => (
                <tr key={p.time}>
                  <th scope="row">{timeLabel(p.time, interval, props.multiDay)}</th>
                  <td class="num">{showVital(v, p[chosen].p75)}</td>
                  <td class="num">{num(p[chosen].samples)}</td>
                  {props.compare && <td class="num">{showVital(v, prevValues[i] ?? null)}</td>}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </details>
    </div>
  );
}
