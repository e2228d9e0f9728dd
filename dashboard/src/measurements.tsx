// The reports of the browser script's extensions (docs/api.md, "Page measurements"): engaged
// time and scroll depth per page, outbound links, downloads, 404s and Web Vitals. A report
// whose endpoint this server does not have (404) is not shown.

import type { JSX } from "preact";
import { useState } from "preact/hooks";
import type { Params } from "./api";
import { useData, useQuery } from "./context";
import { withRange } from "./chart";
import { duration, exactNum, num } from "./format";
import { Body, Report, SimpleRows, useHidden } from "./reports";
import { Modal, Note, RowChange } from "./ui";
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

/** Engaged time and scroll depth of a row, or what no measurement means. */
function engagedCells(r: EngagementRow): [string, string] {
  if (r.engagedVisits === 0) return [NOT_MEASURED, ""];
  return [seconds(r.medianEngagedMs), r.scrollDepth["75"] ?? "0.0%"];
}

const NOT_MEASURED = "not measured";

/** What a page "not measured" means (said under the rows and in the Details view). */
function NoEngagement(): JSX.Element {
  return (
    <p class="hint" data-testid="engagement-none">
      “Not measured”: no visit of the page sent engaged time (the engagement extension was not loaded there,
      or its visitors left before it reported). That is no figure, not 0 s.
    </p>
  );
}

export function EngagementPanel(): JSX.Element | null {
  const { base, view } = useQuery();
  const [details, setDetails] = useState(false);
  const data = useData<Rows<EngagementRow>>(
    "/metrics/breakdown",
    compared([...base, ["by", "engagement"], ["limit", "8"]], view.compare),
  );
  if (useHidden(data.error)) return null;
  const unmeasured = data.data?.rows.some((r) => r.engagedVisits === 0) ?? false;
  return (
    <section class="card panel" aria-labelledby="report-engagement" data-panel="engagement">
      <div class="card-head">
        <h2 id="report-engagement">Engagement</h2>
      </div>
      <div class="panel-body">
        <Body
          data={data}
          empty={(d) => !d.rows.some((r) => r.engagedVisits > 0)}
          emptyText="No engagement measured in this range (the engagement extension of the script)."
        >
          {(d) => (
            <>
              <SimpleRows
                head={["Page", "Median engaged", "Scrolled 75 %"]}
                rows={d.rows.map((r) => ({
                  key: r.value,
                  label: r.value,
                  nums: engagedCells(r),
                  bar: r.medianEngagedMs ?? 0,
                  filter: { dim: "page", op: "is", value: r.value },
                  change: r.change?.medianEngagedMs,
                }))}
                change={view.compare !== "off" ? {} : undefined}
              />
              {unmeasured && <NoEngagement />}
            </>
          )}
        </Body>
      </div>
      {data.data && data.data.rows.some((r) => r.engagedVisits > 0) && (
        <div class="card-foot">
          <button
            type="button"
            class="link"
            aria-label="Details: engagement of every page"
            onClick={() => setDetails(true)}
          >
            Details
          </button>
        </div>
      )}
      {details && <EngagementDetails onClose={() => setDetails(false)} />}
    </section>
  );
}

const PAGE = 50;

/** Every page's engagement, 50 at a time, most visitors first, with every figure the API gives. */
function EngagementDetails(props: { onClose: () => void }): JSX.Element {
  const { base } = useQuery();
  const [offset, setOffset] = useState(0);
  const data = useData<Rows<EngagementRow>>("/metrics/breakdown", [
    ...base,
    ["by", "engagement"],
    ["limit", String(PAGE)],
    ["offset", String(offset)],
    ["order", "-visitors"],
  ]);
  const rows = data.data?.rows ?? [];
  const total = data.data?.totalRows ?? 0;
  return (
    <Modal title="Engagement: every page" onClose={props.onClose} wide>
      {data.error ? (
        <Note error={data.error} />
      ) : (
        <div class="table-wrap" tabIndex={0} role="region" aria-label="Engagement of every page">
          <table class={data.loading ? "details loading" : "details"} data-testid="engagement-details">
            <thead>
              <tr>
                <th scope="col">Page</th>
                <th scope="col" class="num">
                  Visitors
                </th>
                <th scope="col" class="num">
                  Views
                </th>
                <th scope="col" class="num">
                  Engaged visits
                </th>
                <th scope="col" class="num">
                  Median engaged
                </th>
                <th scope="col" class="num">
                  Mean engaged
                </th>
                {DEPTHS.map((p) => (
                  <th scope="col" class="num" key={p}>
                    Scrolled {p} %
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {rows.map((r) => (
                <tr key={r.value} data-value={r.value}>
                  <th scope="row" class="cell">
                    {r.value}
                  </th>
                  <td class="num">{num(r.visitors)}</td>
                  <td class="num">{num(r.pageviews)}</td>
                  <td class="num">{num(r.engagedVisits)}</td>
                  {r.engagedVisits === 0 ? (
                    <td class="num muted" colSpan={2 + DEPTHS.length}>
                      {NOT_MEASURED}
                    </td>
                  ) : (
                    <>
                      <td class="num">{seconds(r.medianEngagedMs)}</td>
                      <td class="num">{seconds(r.meanEngagedMs)}</td>
                      {DEPTHS.map((p) => (
                        <td class="num" key={p}>
                          {r.scrollDepth[p] ?? "0.0%"}
                        </td>
                      ))}
                    </>
                  )}
                </tr>
              ))}
            </tbody>
          </table>
          {rows.length === 0 && !data.loading && <Note>Nothing found.</Note>}
        </div>
      )}
      {rows.some((r) => r.engagedVisits === 0) && <NoEngagement />}
      <div class="pager">
        <button type="button" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - PAGE))}>
          Previous
        </button>
        <span role="status">
          {total
            ? `${exactNum(offset + 1)}–${exactNum(Math.min(total, offset + PAGE))} of ${exactNum(total)}`
            : ""}
        </span>
        <button type="button" disabled={offset + PAGE >= total} onClick={() => setOffset(offset + PAGE)}>
          Next
        </button>
      </div>
    </Modal>
  );
}

const DEPTHS = ["25", "50", "75", "100"];

/** A referrer's URL as a 404 row shows it: without its scheme and "www.", and when long, its start
 * and its end around an ellipsis; the row's title has it whole. */
export function shortUrl(url: string, max = 52): string {
  const bare = bareUrl(url);
  if (bare.length <= max) return bare;
  const head = Math.floor(max * 0.4);
  return `${bare.slice(0, head)}…${bare.slice(bare.length - (max - head - 1))}`;
}

/** Most characters of a link's end that a row always shows. */
const TAIL = 24;

/** A link's URL without its scheme and "www.", split before its last path segment (or its last
 * `TAIL` characters when that segment is longer): a row shortens the start and always shows the
 * end, which tells links of one site apart at any width (375 px too). */
export function urlParts(url: string): { head: string; tail: string } {
  const bare = bareUrl(url);
  const end = bare.endsWith("/") ? bare.length - 1 : bare.length;
  const cut = bare.lastIndexOf("/", end - 1);
  if (cut <= 0) return { head: bare, tail: "" };
  if (bare.length - cut <= TAIL) return { head: bare.slice(0, cut), tail: bare.slice(cut) };
  return { head: bare.slice(0, bare.length - TAIL), tail: bare.slice(bare.length - TAIL) };
}

function bareUrl(url: string): string {
  return url.replace(/^https?:\/\//, "").replace(/^www\./, "");
}

/** A 404 row's label: the page, and its first referrer when it has one. */
function notFoundLabel(r: TargetRow): string {
  if (!r.referrers?.length) return r.value;
  return `${r.value} ← ${r.referrers[0].value ? shortUrl(r.referrers[0].value) : "(no referrer)"}`;
}

/** A link row's label and the end of it always shown (`urlParts`). */
function linkLabel(url: string): { label: string; tail: string } {
  const { head, tail } = urlParts(url);
  return { label: head, tail };
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
              ...(props.by === "404" ? { label: notFoundLabel(r) } : linkLabel(r.value)),
              title:
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
            <div class={cmp ? "vitals compared vitals-head" : "vitals vitals-head"} aria-hidden="true">
              <span>Metric</span>
              <span class="num">p75</span>
              {cmp && <span />}
              <span class="vital-legend">
                <span class="vital-key vital-good-key" /> good <span class="vital-key vital-ni-key" /> needs
                improvement <span class="vital-key vital-poor-key" /> poor
              </span>
              <span class="num">Good</span>
            </div>
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
                    <span class="num vital-good" title={`${f.good} of the page loads were good`}>
                      {f.good} good
                    </span>
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
