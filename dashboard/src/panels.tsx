// Breakdown panels: the top values of a dimension, each row a button that filters the page,
// and a dialog with every row, sortable and searchable.

import type { ComponentChildren, ComponentType, JSX } from "preact";
import { useEffect, useId, useState } from "preact/hooks";
import type { Params } from "./api";
import { useData, useQuery } from "./context";
import { valueLabel } from "./filterbar";
import { activeValue, CHANNELS, dimensionLabel, withFilter, words } from "./filters";
import { duration, exactNum, flag, num } from "./format";
import { PropertiesView } from "./reports";
import { setView, useView } from "./state";
import type { BreakdownAnswer, BreakdownRow } from "./types";
import { Modal, Note, RowChange, Skeleton, Tabs, Field } from "./ui";

type Column = "visitors" | "events" | "pageviews" | "sessions";

export interface TabDef {
  id: string;
  label: string;
  /** Tabs of one group share one tab button; a select in the panel picks among them. */
  group?: string;
  by?: string;
  /** The heading of the value column. */
  column?: string;
  /** The number shown beside each row. */
  metric?: Column;
  extraMetric?: Column;
  /** A panel of its own instead of a breakdown list. */
  custom?: ComponentType;
  /** Rows not to show (as `page_view` in the events list). */
  drop?: string[];
  /** Turns a value into the label shown. */
  render?: (value: string) => JSX.Element | string;
  /** Said instead of the rows when no row has a value (every visitor's is unknown). */
  unknown?: ComponentChildren;
}

const METRIC_LABELS: Record<string, string> = {
  visitors: "Visitors",
  sessions: "Visits",
  pageviews: "Views",
  events: "Events",
  bounceRate: "Bounce rate",
  avgSessionDuration: "Duration",
};

/** `text` after the flag of `country` (an ISO 3166-1 code), when it has one. */
function withFlag(country: string, text: string): JSX.Element {
  const f = flag(country);
  return (
    <>
      {f && (
        <span class="flag" aria-hidden="true">
          {f}
        </span>
      )}
      {text}
    </>
  );
}

function countryLabel(code: string): JSX.Element {
  return withFlag(code, valueLabel("country", code));
}

/** "US-TX" (an ISO 3166-2 code): the country's flag, then the code. */
function regionLabel(code: string): JSX.Element {
  return withFlag(code.slice(0, 2), valueLabel("region", code));
}

function sourceLabel(v: string): string {
  return v === "direct" ? "Direct / None" : valueLabel("source", v);
}

function channelLabel(v: string): string {
  return CHANNELS[v] ?? words(v);
}

export function Panel(props: {
  id: string;
  title: string;
  tabs: TabDef[];
  wide?: boolean;
}): JSX.Element | null {
  const view = useView();
  const { base, metrics } = useQuery();
  const tab = props.tabs.find((t) => t.id === view.tabs[props.id]) ?? props.tabs[0]!;
  const by = tab.by ?? null;
  const limit = 10 + (tab.drop?.length ?? 0);
  const params: Params = by
    ? [...base, ["by", by], ["limit", String(limit)], ["order", `-${tab.metric ?? "visitors"}`]]
    : [];
  // with Compare, each row also carries its figures in the other range and their change
  if (by && view.compare !== "off") params.push(["compare", view.compare]);
  const data = useData<BreakdownAnswer>(by ? "/metrics/breakdown" : null, params);
  const [details, setDetails] = useState(false);
  const [hidden, setHidden] = useState(false);

  useEffect(() => {
    if (data.error?.missing) setHidden(true);
  }, [data.error]);
  if (hidden) return null;

  const panelId = `panel-${props.id}`;
  const chooseTab = (id: string) => setView({ tabs: { ...view.tabs, [props.id]: id } }, true);
  const visible: TabDef[] = [];
  for (const t of props.tabs) {
    if (!t.group) visible.push(t);
    else if (!visible.some((v) => v.id === t.group)) visible.push({ id: t.group, label: t.group });
  }
  const members = tab.group ? props.tabs.filter((t) => t.group === tab.group) : [];
  const kept = (data.data?.rows ?? []).filter((r) => !tab.drop?.includes(r.value));
  const rows = kept.slice(0, 10);
  const dropped = (data.data?.rows.length ?? 0) - kept.length;
  const metric = tab.metric ?? "visitors";
  const Custom = tab.custom;
  const more = data.data ? data.data.totalRows - dropped > rows.length : false;

  return (
    <section
      class={props.wide ? "card panel wide" : "card panel"}
      aria-labelledby={`${panelId}-title`}
      data-panel={props.id}
    >
      <div class="card-head">
        <h2 id={`${panelId}-title`}>{props.title}</h2>
        {visible.length > 1 && (
          <Tabs
            label={`${props.title}: view`}
            tabs={visible}
            value={tab.group ?? tab.id}
            controls={`${panelId}-body`}
            onChange={(id) => chooseTab(props.tabs.find((t) => t.id === id || t.group === id)!.id)}
          />
        )}
      </div>
      <div id={`${panelId}-body`} role={visible.length > 1 ? "tabpanel" : undefined} class="panel-body">
        {members.length > 1 && (
          <Field class="inline sub-pick" label="Break down by">
            {(id) => (
              <>
                <select
                  id={id}
                  value={tab.id}
                  onChange={(e) => chooseTab((e.target as HTMLSelectElement).value)}
                >
                  {members.map((m) => (
                    <option key={m.id} value={m.id}>
                      {m.label}
                    </option>
                  ))}
                </select>
              </>
            )}
          </Field>
        )}
        {Custom ? (
          <Custom />
        ) : data.error ? (
          <Note error={data.error} />
        ) : !data.data ? (
          <Skeleton />
        ) : rows.length === 0 ? (
          <Note />
        ) : tab.unknown && rows.every((r) => r.value === "") ? (
          <div class="note unknown" data-testid="unknown-values">
            {tab.unknown}
          </div>
        ) : (
          <RowList
            by={by!}
            rows={rows}
            metric={metric}
            extra={tab.extraMetric}
            column={tab.column ?? tab.label}
            render={tab.render}
            total={metrics?.visitors ?? 0}
            loading={data.loading}
          />
        )}
      </div>
      {!Custom && by && more && (
        <div class="card-foot">
          <button
            type="button"
            class="link"
            aria-label={`Details: all ${tab.label.toLowerCase()}`}
            onClick={() => setDetails(true)}
          >
            Details
          </button>
        </div>
      )}
      {details && by && (
        <Details
          by={by}
          title={`${props.title}: ${tab.label}`}
          render={tab.render}
          onClose={() => setDetails(false)}
        />
      )}
    </section>
  );
}

function RowList(props: {
  by: string;
  rows: BreakdownRow[];
  metric: Column;
  extra?: Column | undefined;
  column: string;
  render?: ((v: string) => JSX.Element | string) | undefined;
  total: number;
  loading: boolean;
}): JSX.Element {
  const view = useView();
  const max = Math.max(1, ...props.rows.map((r) => r[props.metric] ?? 0));
  const active = activeValue(view.filters, props.by);
  const compared = view.compare !== "off";
  const hint = useId();
  return (
    <div class={props.loading ? "rows loading" : "rows"}>
      <div class="rows-head" aria-hidden="true">
        <span>{props.column}</span>
        {props.extra && <span class="num">{METRIC_LABELS[props.extra]}</span>}
        <span class="num">{METRIC_LABELS[props.metric]}</span>
        {compared && <span class="num delta" />}
      </div>
      <p id={hint} class="sr-only">
        Choose a row to filter the whole page by this {dimensionLabel(props.by).toLowerCase()}.
      </p>
      <ul class="plain" aria-label={props.column}>
        {props.rows.map((r) => {
          const n = r[props.metric] ?? 0;
          const label = props.render ? props.render(r.value) : valueLabel(props.by, r.value);
          return (
            <li key={r.value}>
              <button
                type="button"
                class={active === r.value ? "row active" : "row"}
                data-value={r.value}
                aria-describedby={hint}
                onClick={() =>
                  setView({ filters: withFilter(view.filters, { dim: props.by, op: "is", value: r.value }) })
                }
              >
                <span class="cell">
                  <span class="bar" style={{ width: `${Math.max(1, (n / max) * 100).toFixed(1)}%` }} />
                  <span class="label" title={r.value}>
                    {label}
                  </span>
                </span>
                {props.extra && (
                  <span class="num">
                    {num(r[props.extra] ?? 0)}
                    <span class="sr-only"> {METRIC_LABELS[props.extra]!.toLowerCase()}</span>
                  </span>
                )}
                <span class="num" data-testid="row-num">
                  {num(n)}
                  <span class="sr-only"> {METRIC_LABELS[props.metric]!.toLowerCase()}</span>
                </span>
                {compared && <RowChange change={r.change?.[props.metric]} />}
              </button>
            </li>
          );
        })}
      </ul>
    </div>
  );
}

const PAGE = 50;
const SORTABLE = ["visitors", "sessions", "pageviews", "bounceRate", "avgSessionDuration", "events"] as const;

function Details(props: {
  by: string;
  title: string;
  render?: ((v: string) => JSX.Element | string) | undefined;
  onClose: () => void;
}): JSX.Element {
  const { base } = useQuery();
  const view = useView();
  const [order, setOrder] = useState("-visitors");
  const [offset, setOffset] = useState(0);
  const [search, setSearch] = useState("");
  const [q, setQ] = useState("");
  useEffect(() => {
    const t = setTimeout(() => {
      setQ(search.trim());
      setOffset(0);
    }, 250);
    return () => clearTimeout(t);
  }, [search]);
  const params: Params = [
    ...base,
    ["by", props.by],
    ["limit", String(PAGE)],
    ["offset", String(offset)],
    ["order", order],
  ];
  if (view.compare !== "off") params.push(["compare", view.compare]);
  if (q) params.push(["filter", `${props.by}:contains:${q}`]);
  const data = useData<BreakdownAnswer>("/metrics/breakdown", params);
  const rows = data.data?.rows ?? [];
  const total = data.data?.totalRows ?? 0;
  const sortBy = (col: string) => {
    setOrder(order === `-${col}` ? col : `-${col}`);
    setOffset(0);
  };
  const choose = (value: string) => {
    setView({ filters: withFilter(view.filters, { dim: props.by, op: "is", value }) });
    props.onClose();
  };
  return (
    <Modal title={props.title} onClose={props.onClose} wide>
      <Field label="Search">
        {(id) => (
          <>
            <input
              id={id}
              type="search"
              value={search}
              onInput={(e) => setSearch((e.target as HTMLInputElement).value)}
            />
          </>
        )}
      </Field>
      {data.error ? (
        <Note error={data.error} />
      ) : (
        <div class="table-wrap">
          <table class={data.loading ? "details loading" : "details"}>
            <thead>
              <tr>
                <th scope="col">{dimensionLabel(props.by)}</th>
                {SORTABLE.map((c) => {
                  const sort = order === `-${c}` ? "descending" : order === c ? "ascending" : undefined;
                  return (
                    <th scope="col" class="num" key={c} aria-sort={sort}>
                      <button type="button" class="sort" onClick={() => sortBy(c)}>
                        {METRIC_LABELS[c]}
                        <span aria-hidden="true">
                          {sort === "descending" ? " ↓" : sort === "ascending" ? " ↑" : ""}
                        </span>
                      </button>
                    </th>
                  );
                })}
              </tr>
            </thead>
            <tbody>
              {rows.map((r) => (
                <tr key={r.value}>
                  <th scope="row">
                    <button type="button" class="link cell" onClick={() => choose(r.value)}>
                      {props.render ? props.render(r.value) : valueLabel(props.by, r.value)}
                    </button>
                  </th>
                  <td class="num">
                    {num(r.visitors)} {view.compare !== "off" && <RowChange change={r.change?.visitors} />}
                  </td>
                  <td class="num">{num(r.sessions ?? 0)}</td>
                  <td class="num">{num(r.pageviews ?? 0)}</td>
                  <td class="num">{r.bounceRate ?? "–"}</td>
                  <td class="num">{duration(r.avgSessionDuration ?? 0)}</td>
                  <td class="num">{num(r.events ?? 0)}</td>
                </tr>
              ))}
            </tbody>
          </table>
          {rows.length === 0 && !data.loading && <Note>Nothing found.</Note>}
        </div>
      )}
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

function LazyMap(): JSX.Element {
  const [Comp, setComp] = useState<ComponentType | null>(null);
  const [failed, setFailed] = useState(false);
  useEffect(() => {
    import("./map").then(
      (m) => setComp(() => m.WorldMap),
      () => setFailed(true),
    );
  }, []);
  if (failed) return <Note>The map could not be loaded.</Note>;
  return Comp ? <Comp /> : <Skeleton rows={6} />;
}

export function SourcesPanel(): JSX.Element | null {
  return (
    <Panel
      id="sources"
      title="Sources"
      tabs={[
        { id: "channel", label: "Channels", by: "channel", column: "Channel", render: channelLabel },
        { id: "source", label: "Sources", by: "source", column: "Source", render: sourceLabel },
        { id: "referrer", label: "Referrers", by: "referrer", column: "Referrer" },
        { id: "utm_campaign", group: "Campaigns", label: "UTM campaign", by: "utm_campaign" },
        { id: "utm_source", group: "Campaigns", label: "UTM source", by: "utm_source" },
        { id: "utm_medium", group: "Campaigns", label: "UTM medium", by: "utm_medium" },
        { id: "utm_content", group: "Campaigns", label: "UTM content", by: "utm_content" },
        { id: "utm_term", group: "Campaigns", label: "UTM term", by: "utm_term" },
      ]}
    />
  );
}

export function PagesPanel(): JSX.Element | null {
  return (
    <Panel
      id="pages"
      title="Pages"
      tabs={[
        { id: "top", label: "Top pages", by: "page", column: "Page", extraMetric: "pageviews" },
        { id: "entry", label: "Entry pages", by: "entry_page", column: "Entry page" },
        { id: "exit", label: "Exit pages", by: "exit_page", column: "Exit page" },
        { id: "hostname", label: "Hostnames", by: "hostname", column: "Hostname" },
      ]}
    />
  );
}

/** Why no visitor has a region or city: svc locates an address by its country only (the geo data
 * it ships, geoip2fast, has no regions or cities, and it downloads none); they come from an edge
 * in front of it (docs/api.md, "Location from an edge"; docs/edge.md). */
function NoGeo(props: { what: "region" | "city" }): JSX.Element {
  return (
    <>
      <p>
        <strong>No {props.what} is known for these visitors.</strong>
      </p>
      <p>
        svc finds a visitor's country from their address with the geo data it ships, which has no regions or
        cities. Regions and cities come from an edge in front of svc that locates visitors: Cloudflare, Vercel
        or CloudFront (its addresses in <code>SVC_TRUSTED_PROXIES</code>
        ), or the svc edge (docs/edge.md). Without one, the Countries tab and the map still show where
        visitors are.
      </p>
    </>
  );
}

export function LocationsPanel(): JSX.Element | null {
  return (
    <Panel
      id="locations"
      title="Locations"
      tabs={[
        { id: "map", label: "Map", custom: LazyMap },
        { id: "country", label: "Countries", by: "country", column: "Country", render: countryLabel },
        {
          id: "region",
          label: "Regions",
          by: "region",
          column: "Region",
          render: regionLabel,
          unknown: <NoGeo what="region" />,
        },
        { id: "city", label: "Cities", by: "city", column: "City", unknown: <NoGeo what="city" /> },
      ]}
    />
  );
}

export function DevicesPanel(): JSX.Element | null {
  const view = useView();
  const browser = activeValue(view.filters, "browser");
  const os = activeValue(view.filters, "os");
  return (
    <Panel
      id="devices"
      title="Devices"
      tabs={[
        browser !== null
          ? {
              id: "browser",
              label: "Browser",
              by: "browser_version",
              column: `${browser} version`,
            }
          : { id: "browser", label: "Browser", by: "browser", column: "Browser" },
        os !== null
          ? { id: "os", label: "OS", by: "os_version", column: `${os} version` }
          : { id: "os", label: "OS", by: "os", column: "Operating system" },
        { id: "device", label: "Device", by: "device", column: "Device", render: words },
      ]}
    />
  );
}

export function EventsPanel(): JSX.Element | null {
  return (
    <Panel
      id="events"
      title="Custom events"
      tabs={[
        {
          id: "events",
          label: "Events",
          by: "event",
          column: "Event",
          metric: "visitors",
          extraMetric: "events",
          drop: ["page_view"],
        },
        { id: "props", label: "Properties", custom: PropertiesView },
      ]}
    />
  );
}
