// Dropped events (GET /projects/{id}/dropped): what the bot filter and the project's exclusions
// kept out, by reason and by UTC day, and the samples kept of them (a few days, no addresses);
// apart, the requests refused whole with 429 (rate limit, monthly quota), counted in requests.
// For those who may manage the project (settings/rights.ts); the server refuses others.

import type { JSX } from "preact";
import { useQuery, useLoad } from "./context";
import { addDays, daysBetween, dayLabel, instantLabel } from "./dates";
import { countryName, exactNum } from "./format";
import { Body, Report, useHidden } from "./reports";
import { canManage } from "./settings/rights";
import "./screens.css";

export interface DroppedAnswer {
  from: string;
  to: string;
  // `refused*`: requests, not events (absent from an older server)
  days: { date: string; reasons: Record<string, number>; refused?: Record<string, number> }[];
  totals: Record<string, number>;
  total: number;
  refusedTotals?: Record<string, number>;
  refusedTotal?: number;
  samples: {
    time: string;
    reason: string;
    userAgent: string | null;
    path: string | null;
    referrerHost: string | null;
    country: string | null;
  }[];
}

/** Why an event was dropped, as a person says it (the reasons of docs/api.md). */
export const REASONS: Record<string, string> = {
  bot: "Crawler (its user agent)",
  missing_user_agent: "No user agent",
  headless: "Headless browser",
  http_library: "HTTP library or script",
  excluded_address: "Excluded address",
  excluded_path: "Excluded path",
  foreign_hostname: "Not one of the project's domains",
  duplicate_event_id: "Sent twice (same event id)",
  data_centre: "Data-centre address",
};

/** Why a whole request was refused with 429 before any of its events was read. */
export const REFUSALS: Record<string, string> = {
  rate_limit: "Rate-limited requests",
  quota: "Over-quota requests",
};

const REFUSED_WHY: Record<string, string> = {
  rate_limit: "by a rate limit",
  quota: "over the monthly quota",
};

function reasonLabel(r: string): string {
  return REASONS[r] ?? r;
}

function refusalLabel(r: string): string {
  return REFUSALS[r] ?? r;
}

function sum(counts: Record<string, number> | undefined): number {
  return Object.values(counts ?? {}).reduce((a, b) => a + b, 0);
}

/** The server answers at most 400 days. */
const MAX_DAYS = 400;

export function DroppedPanel(): JSX.Element | null {
  const { api, project, range, readOnly, tick } = useQuery();
  const allowed = canManage(api, project, readOnly);
  const from =
    daysBetween(range.from, range.to) >= MAX_DAYS ? addDays(range.to, -(MAX_DAYS - 1)) : range.from;
  const data = useLoad<DroppedAnswer>(
    api,
    tick,
    allowed ? `/projects/${encodeURIComponent(project.id)}/dropped` : null,
    [
      ["from", from],
      ["to", range.to],
    ],
  );
  const refused = data.error?.status === 403;
  if (useHidden(data.error) || !allowed || refused) return null;
  return (
    <Report id="dropped" title="Dropped events" wide>
      <Body
        data={data}
        empty={(d) => d.total === 0 && d.samples.length === 0 && !d.refusedTotal}
        emptyText="Nothing was dropped or refused in this range: no crawler, script or excluded visitor sent events."
      >
        {(d) => <Dropped answer={d} />}
      </Body>
    </Report>
  );
}

function Dropped(props: { answer: DroppedAnswer }): JSX.Element {
  const { project } = useQuery();
  const d = props.answer;
  const reasons = Object.entries(d.totals)
    .filter(([, n]) => n > 0)
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  const max = Math.max(1, ...reasons.map(([, n]) => n));
  const days = d.days.filter((day) => sum(day.reasons) > 0 || sum(day.refused) > 0).reverse();
  const shown = reasons.map(([r]) => r);
  const refusedTotals = d.refusedTotals;
  const refused = Object.entries(refusedTotals ?? {})
    .filter(([, n]) => n > 0)
    .map(([r]) => r);
  return (
    <div class="stack dropped">
      <p class="hint" data-testid="dropped-total">
        {exactNum(d.total)} event{d.total === 1 ? "" : "s"} dropped from {dayLabel(d.from, true)} to{" "}
        {dayLabel(d.to, true)} (days in UTC, as received).
      </p>
      {refusedTotals && (
        <p class="hint" data-testid="refused-total">
          {d.refusedTotal
            ? `${exactNum(d.refusedTotal)} request${d.refusedTotal === 1 ? "" : "s"} refused with 429 before their events were read (nothing of them stored; the sender may retry): ${Object.entries(
                refusedTotals,
              )
                .filter(([, n]) => n > 0)
                .map(([r, n]) => `${exactNum(n)} ${REFUSED_WHY[r] ?? r}`)
                .join(", ")}.`
            : "No request was refused by a rate limit or the monthly quota."}
        </p>
      )}
      <div class="split">
        <div>
          <h3 class="sub-title">By reason</h3>
          <ul class="plain dropped-reasons" aria-label="Dropped events by reason">
            {reasons.map(([r, n]) => (
              <li key={r} data-reason={r} class="row dropped-reason">
                <span class="cell">
                  <span class="bar" style={{ width: `${Math.max(1, (n / max) * 100).toFixed(1)}%` }} />
                  <span class="label">{reasonLabel(r)}</span>
                </span>
                <span class="num" data-testid="reason-count">
                  {exactNum(n)}
                </span>
              </li>
            ))}
          </ul>
        </div>
        <div>
          <h3 class="sub-title">By day</h3>
          {days.length === 0 ? (
            <p class="note">No day dropped anything.</p>
          ) : (
            <div
              class="table-wrap dropped-days"
              tabIndex={0}
              role="region"
              aria-label="Dropped events by day"
            >
              <table class="details" data-testid="dropped-days">
                <thead>
                  <tr>
                    <th scope="col">Day (UTC)</th>
                    {shown.map((r) => (
                      <th scope="col" class="num" key={r}>
                        {reasonLabel(r)}
                      </th>
                    ))}
                    <th scope="col" class="num">
                      Total
                    </th>
                    {refused.map((r) => (
                      <th scope="col" class="num" key={r}>
                        {refusalLabel(r)}
                      </th>
                    ))}
                  </tr>
                </thead>
                <tbody>
                  {days.map((day) => (
                    <tr key={day.date} data-day={day.date}>
                      <th scope="row">{dayLabel(day.date, true)}</th>
                      {shown.map((r) => (
                        <td class="num" key={r}>
                          {exactNum(day.reasons[r] ?? 0)}
                        </td>
                      ))}
                      <td class="num" data-testid="day-total">
                        {exactNum(sum(day.reasons))}
                      </td>
                      {refused.map((r) => (
                        <td class="num" key={r} data-refusal={r}>
                          {exactNum(day.refused?.[r] ?? 0)}
                        </td>
                      ))}
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </div>
      </div>
      <h3 class="sub-title">Recent samples</h3>
      {d.samples.length === 0 ? (
        <p class="note">No samples: they are kept 3 days (the first few of each reason a day).</p>
      ) : (
        <div class="table-wrap" tabIndex={0} role="region" aria-label="Samples of dropped events">
          <table class="details" data-testid="dropped-samples">
            <caption class="sr-only">Samples of dropped events, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Received</th>
                <th scope="col">Why</th>
                <th scope="col">Page</th>
                <th scope="col">User agent</th>
                <th scope="col">Referrer</th>
                <th scope="col">Country</th>
              </tr>
            </thead>
            <tbody>
              {d.samples.map((s, i) => (
                <tr key={i} data-reason={s.reason}>
                  <td>{instantLabel(s.time, project.timezone)}</td>
                  <td>{reasonLabel(s.reason)}</td>
                  <td class="cell" title={s.path ?? ""}>
                    {s.path ?? "–"}
                  </td>
                  <td class="cell ua" title={s.userAgent ?? ""}>
                    {s.userAgent || "(none)"}
                  </td>
                  <td>{s.referrerHost || "–"}</td>
                  <td>{s.country ? countryName(s.country) : "–"}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <p class="hint">
            The first few of each reason a day, kept 3 days, never with an address. Times in{" "}
            {project.timezone}.
          </p>
        </div>
      )}
    </div>
  );
}
