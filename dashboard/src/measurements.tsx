// The reports of the browser script's extensions (docs/api.md, "Page measurements"): engaged
// time and scroll depth per page, outbound links, downloads, 404s and Web Vitals. A report
// whose endpoint this server does not have (404) is not shown.

import type { JSX } from "preact";
import type { Params } from "./api";
import { useData, useQuery } from "./context";
import { withRange } from "./chart";
import { duration, num } from "./format";
import { Body, Report, SimpleRows, useHidden } from "./reports";
import { RowChange } from "./ui";
import {
  showVital,
  VITALS,
  VitalsChart,
  type VitalFigures,
  type VitalsFigures,
  type VitalsPoint,
} from "./vitalschart";

interface EngagementRow {
  value: string;
  visitors: number;
  pageviews: number;
  engagedVisits: number;
  medianEngagedMs: number | null;
  meanEngagedMs: number | null;
  scrollDepth: Record<string, string>;
  /** With `compare` (docs/api.md, "Comparing with another range"). */
  change?: { medianEngagedMs?: number | null };
}

interface TargetRow {
  value: string;
  visitors: number;
  events: number;
  referrers?: { value: string; events: number }[];
  change?: { visitors?: number | null };
}

interface Rows<T> {
  by: string;
  rows: T[];
  totalRows: number;
}

/** GET /metrics/vitals with `interval`: the range's figures and a point per interval. */
type VitalsAnswer = VitalsFigures & { interval?: string; points?: VitalsPoint[] };

function seconds(ms: number | null): string {
  return ms === null ? "–" : duration(ms / 1000);
}

/** The relative change in percent from `then` to `now`, one decimal, as the API's `change`
 * (docs/api.md, "Comparing with another range"): null when there is nothing to relate to. */
function relative(now: number | null, then: number | null | undefined): number | null {
  if (now === null || then === null || then === undefined) return null;
  if (then === 0) return now === 0 ? 0 : null;
  return Math.round((1000 * (now - then)) / then) / 10;
}

function share(text: string | undefined): number {
  return text ? parseFloat(text) : 0;
}

/** `params` with the view's `compare`, when Compare is on. */
function compared(params: Params, compare: string): Params {
  return compare === "off" ? params : [...params, ["compare", compare]];
}

export function EngagementPanel(): JSX.Element | null {
  const { base, view } = useQuery();
  const data = useData<Rows<EngagementRow>>(
    "/metrics/breakdown",
    compared([...base, ["by", "engagement"], ["limit", "8"]], view.compare),
  );
  if (useHidden(data.error)) return null;
  return (
    <Report id="engagement" title="Engagement">
      <Body
        data={data}
        empty={(d) => !d.rows.some((r) => r.engagedVisits > 0)}
        emptyText="No engagement measured in this range (the engagement extension of the script)."
      >
        {(d) => (
          <SimpleRows
            head={["Page", "Median engaged", "Scrolled 75 %"]}
            rows={d.rows.map((r) => ({
              key: r.value,
              label: r.value,
              nums: [seconds(r.medianEngagedMs), r.scrollDepth["75"] ?? "0.0%"],
              bar: r.medianEngagedMs ?? 0,
              filter: { dim: "page", op: "is", value: r.value },
              change: r.change?.medianEngagedMs,
            }))}
            change={view.compare !== "off" ? {} : undefined}
          />
        )}
      </Body>
    </Report>
  );
}

function TargetRows(props: { by: string; head: string; empty: string }): JSX.Element | null {
  const { base, view } = useQuery();
  const data = useData<Rows<TargetRow>>(
    "/metrics/breakdown",
    compared([...base, ["by", props.by], ["limit", "6"]], view.compare),
  );
  if (useHidden(data.error)) return null;
  return (
    <div data-report={props.by}>
      <Body data={data} empty={(d) => d.rows.length === 0} emptyText={props.empty}>
        {(d) => (
          <SimpleRows
            head={[props.head, "Visitors", "Events"]}
            rows={d.rows.map((r) => ({
              key: r.value,
              label:
                props.by === "404" && r.referrers?.length
                  ? `${r.value} ← ${r.referrers[0].value || "(no referrer)"}`
                  : r.value,
              nums: [num(r.visitors), num(r.events)],
              bar: r.events,
              filter:
                props.by === "404"
                  ? { dim: "page", op: "is", value: r.value }
                  : { dim: "prop:url", op: "is", value: r.value },
              change: r.change?.visitors,
            }))}
            change={view.compare !== "off" ? { upIsBad: props.by === "404" } : undefined}
          />
        )}
      </Body>
    </div>
  );
}

export function LinksPanel(): JSX.Element {
  return (
    <Report id="links" title="Outbound links, downloads, 404s">
      <div class="split">
        <TargetRows by="outbound" head="Outbound link" empty="No outbound clicks in this range." />
        <TargetRows by="download" head="Download" empty="No downloads in this range." />
        <TargetRows by="404" head="Page not found ← referrer" empty="No 404s in this range." />
      </div>
    </Report>
  );
}

/** A stacked bar of the good / needs improvement / poor shares of one vital. */
function ShareBar(props: { figures: VitalFigures }): JSX.Element {
  const f = props.figures;
  const parts: [string, string][] = [
    ["good", f.good],
    ["needs-improvement", f.needsImprovement],
    ["poor", f.poor],
  ];
  return (
    <span
      class="vital-bar"
      role="img"
      aria-label={`good ${f.good}, needs improvement ${f.needsImprovement}, poor ${f.poor}`}
    >
      {parts.map(([cls, text]) => (
        <span key={cls} class={`vital-${cls}`} style={{ width: `${share(text)}%` }} />
      ))}
    </span>
  );
}

export function VitalsPanel(): JSX.Element | null {
  const { base, interval, range, view, metrics } = useQuery();
  const data = useData<VitalsAnswer>("/metrics/vitals", [...base, ["interval", interval]]);
  // the comparison period's points, drawn dashed (as the time series draws its own)
  const cmp = view.compare !== "off" ? metrics?.compare : undefined;
  const prev = useData<VitalsAnswer>(
    cmp ? "/metrics/vitals" : null,
    cmp ? [...withRange(base, cmp.from, cmp.to), ["interval", interval]] : [],
  );
  if (useHidden(data.error)) return null;
  return (
    <Report id="vitals" title="Web Vitals (p75)">
      <Body
        data={data}
        empty={(d) => d.samples === 0}
        emptyText="No Web Vitals measured in this range (the vitals extension of the script)."
      >
        {(d) => (
          <>
            <ul class={cmp ? "plain vitals compared" : "plain vitals"}>
              {VITALS.map((v) => {
                const f = d[v.name];
                const then = prev.data?.[v.name].p75;
                return (
                  <li key={v.name} class="vital" data-vital={v.name}>
                    <span class="vital-name" title={v.label}>
                      {v.name.toUpperCase()}
                    </span>
                    <span class="num" data-testid="p75">
                      {showVital(v, f.p75)}
                    </span>
                    {cmp && <RowChange change={relative(f.p75, then)} upIsBad />}
                    <ShareBar figures={f} />
                    <span class="num vital-good">{f.good}</span>
                  </li>
                );
              })}
            </ul>
            <VitalsChart
              compare={cmp ? (prev.data?.points ?? []) : undefined}
              points={d.points ?? []}
              interval={d.interval ?? interval}
              multiDay={range.from !== range.to}
            />
          </>
        )}
      </Body>
    </Report>
  );
}
