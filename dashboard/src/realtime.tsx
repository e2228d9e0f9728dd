// "3 current visitors": distinct visitors of the last minutes, polled while the page is visible;
// a click opens the realtime view (GET /metrics/realtime): visitors per minute of the last 30,
// and the current visitors' pages, sources and countries, polled every 5 s while it is open.
// Notes written for a moment of those 30 minutes ("deployed v2" at 14:05) are drawn on its bars.

import type { JSX } from "preact";
import { useEffect, useState } from "preact/hooks";
import { AnnotationMarkers } from "./annotations";
import { ApiError } from "./api";
import { scoped, useQuery } from "./context";
import { addDays, isDay, todayIn } from "./dates";
import { valueLabel } from "./filterbar";
import { flag, num } from "./format";
import { useSaved, type Annotation } from "./saved/api";
import type { RealtimeAnswer } from "./types";
import { Modal } from "./ui";

/** How often the count is asked for; with the view open, every VIEW_MS. */
const EVERY_MS = 15_000;
export const VIEW_MS = 5_000;

export function Realtime(): JSX.Element | null {
  const { api, project } = useQuery();
  const [data, setData] = useState<RealtimeAnswer | null>(null);
  const [missing, setMissing] = useState(false);
  const [open, setOpen] = useState(false);

  useEffect(() => {
    setData(null);
  }, [project.id]);

  useEffect(() => {
    let stopped = false;
    let timer = 0;
    const every = open ? VIEW_MS : EVERY_MS;
    const poll = async () => {
      if (document.visibilityState === "visible") {
        try {
          const r = await api.get<RealtimeAnswer>("/metrics/realtime", scoped(api, project, []), true);
          if (!stopped) setData(r);
        } catch (e) {
          if (e instanceof ApiError && e.missing) {
            if (!stopped) setMissing(true);
            return;
          }
        }
      }
      if (!stopped) timer = window.setTimeout(poll, every);
    };
    void poll();
    const wake = () => {
      if (document.visibilityState === "visible") {
        clearTimeout(timer);
        void poll();
      }
    };
    document.addEventListener("visibilitychange", wake);
    return () => {
      stopped = true;
      clearTimeout(timer);
      document.removeEventListener("visibilitychange", wake);
    };
  }, [project.id, open]);

  if (missing) return null;
  const n = data?.visitors;
  const label = n === undefined ? "… current visitors" : `${num(n)} current visitor${n === 1 ? "" : "s"}`;
  return (
    <div class="realtime">
      <button
        type="button"
        class="realtime-btn"
        aria-haspopup="dialog"
        aria-expanded={open}
        data-testid="realtime"
        data-value={n ?? ""}
        onClick={() => setOpen(!open)}
      >
        <span class={n ? "pulse on" : "pulse"} aria-hidden="true" />
        {label}
      </button>
      {open && <RealtimeView data={data} onClose={() => setOpen(false)} />}
    </div>
  );
}

function RealtimeView(props: { data: RealtimeAnswer | null; onClose: () => void }): JSX.Element {
  const d = props.data;
  const { api, project } = useQuery();
  // the last 30 minutes are today or yesterday in the project's zone, where notes are dated
  const today = todayIn(project.timezone);
  const notes = useSaved<Annotation>(
    api,
    project.id,
    "annotations",
    `from=${addDays(today, -1)}&to=${today}`,
  );
  return (
    <Modal title="Realtime" onClose={props.onClose} wide>
      <div class="realtime-view" data-testid="realtime-view">
        <p class="note">
          {d ? (
            <>
              <strong data-testid="realtime-visitors">{num(d.visitors)}</strong> visitor
              {d.visitors === 1 ? "" : "s"} in the last {Math.round(d.windowSeconds / 60)} minutes. Updated
              every {VIEW_MS / 1000} s while this is open.
            </>
          ) : (
            "Loading…"
          )}
        </p>
        {d?.minutes && <Minutes minutes={d.minutes} notes={notes.items ?? []} />}
        <div class="realtime-lists">
          <TopList
            id="pages"
            title="Pages viewed right now"
            column="Page"
            rows={d?.pages}
            empty="Nobody is on the site right now."
          />
          {d?.sources && (
            <TopList
              id="sources"
              title="Sources right now"
              column="Source"
              rows={d.sources}
              label={(v) => (v === "direct" ? "Direct / None" : valueLabel("source", v))}
            />
          )}
          {d?.countries && (
            <TopList
              id="countries"
              title="Countries right now"
              column="Country"
              rows={d.countries}
              label={(v) => `${flag(v)} ${valueLabel("country", v)}`.trim()}
            />
          )}
        </div>
      </div>
    </Modal>
  );
}

/** The UTC minute (`YYYY-MM-DDTHH:MM`, as GET /metrics/realtime's `minutes`) of a note written
 * for a moment; null for a note of a whole day, which no minute is. */
function minuteOf(a: Annotation): string | null {
  if (isDay(a.date)) return null;
  const t = new Date(a.date);
  return Number.isNaN(t.getTime()) ? null : t.toISOString().slice(0, 16);
}

/** Visitors per minute of the last 30, a bar each, the current minute last; the notes of those
 * minutes drawn on them and listed under them. */
function Minutes(props: { minutes: { time: string; visitors: number }[]; notes: Annotation[] }): JSX.Element {
  const m = props.minutes;
  const marks = new Map<number, Annotation[]>();
  for (const a of props.notes) {
    const i = m.findIndex((p) => p.time === minuteOf(a));
    if (i >= 0) marks.set(i, [...(marks.get(i) ?? []), a]);
  }
  const max = Math.max(1, ...m.map((p) => p.visitors));
  const total = m.length;
  const ago = (i: number) => total - 1 - i;
  const peak = m.reduce((best, p, i) => (p.visitors > (m[best]?.visitors ?? -1) ? i : best), 0);
  const summary =
    `Visitors per minute over the last ${total} minutes: ` +
    (m[peak] && m[peak]!.visitors > 0
      ? `most, ${num(m[peak]!.visitors)}, ${agoText(ago(peak))}; ${num(m[total - 1]?.visitors ?? 0)} this minute.`
      : "none.");
  const W = 600;
  const H = 120;
  const slot = W / Math.max(1, total);
  const noted = [...marks].sort(([a], [b]) => a - b);
  return (
    <section class="realtime-minutes" aria-labelledby="rt-minutes-title">
      <h3 id="rt-minutes-title">Visitors per minute</h3>
      <svg viewBox={`0 0 ${W} ${H + 18}`} role="img" aria-label={summary} data-testid="realtime-minutes">
        {m.map((p, i) => {
          const h = (p.visitors / max) * H;
          return (
            <rect
              key={p.time}
              class={p.visitors ? "rt-bar" : "rt-bar zero"}
              data-time={p.time}
              data-visitors={p.visitors}
              x={i * slot + 1}
              y={H - Math.max(h, 1)}
              width={Math.max(1, slot - 2)}
              height={Math.max(h, 1)}
            >
              <title>{`${agoText(ago(i))}: ${num(p.visitors)} visitor${p.visitors === 1 ? "" : "s"}`}</title>
            </rect>
          );
        })}
        <AnnotationMarkers notes={marks} x={(i) => i * slot + slot / 2} top={4} bottom={H} />
        <text x={0} y={H + 14} class="rt-axis">
          {`${total} min ago`}
        </text>
        <text x={W} y={H + 14} class="rt-axis" text-anchor="end">
          now
        </text>
      </svg>
      {noted.length > 0 && (
        <ul class="plain rt-notes" aria-label="Notes of these minutes" data-testid="realtime-notes">
          {noted.flatMap(([i, list]) =>
            list.map((a) => (
              <li key={a.id} data-index={i}>
                {agoText(ago(i))}: {a.text}
              </li>
            )),
          )}
        </ul>
      )}
    </section>
  );
}

function agoText(minutes: number): string {
  if (minutes === 0) return "this minute";
  return minutes === 1 ? "1 minute ago" : `${minutes} minutes ago`;
}

function TopList(props: {
  id: string;
  title: string;
  column: string;
  rows: { value: string; visitors: number }[] | undefined;
  label?: (v: string) => string;
  empty?: string;
}): JSX.Element {
  const rows = props.rows ?? [];
  const max = Math.max(1, ...rows.map((r) => r.visitors));
  return (
    <section class="realtime-top" aria-labelledby={`rt-${props.id}-title`} data-realtime={props.id}>
      <h3 id={`rt-${props.id}-title`}>{props.title}</h3>
      {rows.length === 0 ? (
        <p class="note">{props.empty ?? "None right now."}</p>
      ) : (
        <ul class="plain" aria-label={props.column}>
          {rows.slice(0, 10).map((r) => (
            <li key={r.value} data-value={r.value} data-visitors={r.visitors}>
              <span class="bar" style={{ width: `${Math.max(1, (r.visitors / max) * 100).toFixed(1)}%` }} />
              <span class="label">{props.label ? props.label(r.value) : valueLabel(props.id, r.value)}</span>
              <span class="num">
                {num(r.visitors)}
                <span class="sr-only"> visitors</span>
              </span>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
