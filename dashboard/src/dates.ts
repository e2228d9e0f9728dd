// Calendar days as "YYYY-MM-DD" strings, in the project's time zone. Arithmetic is done on UTC
// dates so that no local offset or daylight-saving change can shift a day.

export type Period = "today" | "yesterday" | "7d" | "30d" | "month" | "last_month" | "year" | "custom";

export const PERIODS: { id: Period; label: string }[] = [
  { id: "today", label: "Today" },
  { id: "yesterday", label: "Yesterday" },
  { id: "7d", label: "Last 7 days" },
  { id: "30d", label: "Last 30 days" },
  { id: "month", label: "This month" },
  { id: "last_month", label: "Last month" },
  { id: "year", label: "This year" },
  { id: "custom", label: "Custom range" },
];

export type Interval = "hour" | "day" | "week" | "month";

const DAY_RE = /^\d{4}-\d{2}-\d{2}$/;

export function isDay(s: string | null | undefined): s is string {
  if (!s || !DAY_RE.test(s)) return false;
  const d = parse(s);
  return !Number.isNaN(d.getTime()) && iso(d) === s;
}

function parse(day: string): Date {
  return new Date(`${day}T00:00:00Z`);
}

function iso(d: Date): string {
  return d.toISOString().slice(0, 10);
}

export function addDays(day: string, n: number): string {
  const d = parse(day);
  d.setUTCDate(d.getUTCDate() + n);
  return iso(d);
}

export function daysBetween(from: string, to: string): number {
  return Math.round((parse(to).getTime() - parse(from).getTime()) / 86_400_000);
}

/** Today's date in a time zone. */
export function todayIn(tz: string, now: Date = new Date()): string {
  try {
    const parts = new Intl.DateTimeFormat("en-CA", {
      timeZone: tz,
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
    }).formatToParts(now);
    const get = (t: string) => parts.find((p) => p.type === t)?.value ?? "";
    return `${get("year")}-${get("month")}-${get("day")}`;
  } catch {
    return iso(now);
  }
}

/** The current hour in a time zone, as the time series writes it: "2026-11-21T13:00". */
export function nowHourIn(tz: string, now: Date = new Date()): string {
  try {
    const h = new Intl.DateTimeFormat("en-GB", { timeZone: tz, hour: "2-digit", hourCycle: "h23" }).format(
      now,
    );
    return `${todayIn(tz, now)}T${h.padStart(2, "0")}:00`;
  } catch {
    return `${now.toISOString().slice(0, 13)}:00`;
  }
}

export interface Range {
  from: string;
  to: string;
}

export function rangeOf(period: Period, today: string, custom?: Partial<Range>): Range {
  const [y, m] = today.split("-");
  switch (period) {
    case "today":
      return { from: today, to: today };
    case "yesterday": {
      const d = addDays(today, -1);
      return { from: d, to: d };
    }
    case "7d":
      return { from: addDays(today, -6), to: today };
    case "30d":
      return { from: addDays(today, -29), to: today };
    case "month":
      return { from: `${y}-${m}-01`, to: today };
    case "last_month": {
      const first = `${y}-${m}-01`;
      const last = addDays(first, -1);
      return { from: `${last.slice(0, 7)}-01`, to: last };
    }
    case "year":
      return { from: `${y}-01-01`, to: today };
    case "custom": {
      let from = isDay(custom?.from) ? custom.from : addDays(today, -6);
      let to = isDay(custom?.to) ? custom.to : today;
      if (to < from) [from, to] = [to, from];
      return { from, to };
    }
  }
}

/** Intervals that make sense for a range, finest first. */
export function intervalsFor(r: Range): Interval[] {
  const days = daysBetween(r.from, r.to) + 1;
  const out: Interval[] = [];
  if (days <= 7) out.push("hour");
  if (days >= 2) out.push("day");
  if (days >= 14) out.push("week");
  if (days >= 60) out.push("month");
  return out;
}

export function defaultInterval(r: Range, period: Period): Interval {
  const days = daysBetween(r.from, r.to) + 1;
  if (days <= 2) return "hour";
  if (period === "year" && days > 62) return "month";
  if (days <= 92) return "day";
  if (days <= 366) return "week";
  return "month";
}

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/** "2026-11-01" -> "Nov 1"; with year: "Nov 1, 2026". */
export function dayLabel(day: string, withYear = false): string {
  const [y, m, d] = day.slice(0, 10).split("-");
  const s = `${MONTHS[Number(m) - 1] ?? m} ${Number(d)}`;
  return withYear ? `${s}, ${y}` : s;
}

/** An instant (ISO 8601) as the dashboard writes a moment, in the time zone `tz`:
 * "Dec 7, 2026, 15:41"; "" for no instant, the text itself when it is not one. */
export function instantLabel(iso: string | null | undefined, tz: string): string {
  if (!iso) return "";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  try {
    const hm = new Intl.DateTimeFormat("en-GB", {
      timeZone: tz,
      hour: "2-digit",
      minute: "2-digit",
      hourCycle: "h23",
    }).format(d);
    return `${dayLabel(todayIn(tz, d), true)}, ${hm}`;
  } catch {
    return `${dayLabel(iso.slice(0, 10), true)}, ${iso.slice(11, 16)}`;
  }
}

/** A point's time as shown on the chart: "13:00", "Nov 1", "Nov 1, 13:00", "Nov 2026". */
export function timeLabel(time: string, interval: string, multiDay = true): string {
  if (interval === "hour") {
    const hm = time.slice(11, 16) || "00:00";
    return multiDay ? `${dayLabel(time)}, ${hm}` : hm;
  }
  if (interval === "month") {
    const [y, m] = time.split("-");
    return `${MONTHS[Number(m) - 1] ?? m} ${y}`;
  }
  if (interval === "week") return `Week of ${dayLabel(time)}`;
  return dayLabel(time);
}

export function rangeLabel(r: Range): string {
  if (r.from === r.to) return dayLabel(r.from, true);
  const sameYear = r.from.slice(0, 4) === r.to.slice(0, 4);
  return `${dayLabel(r.from, !sameYear)} – ${dayLabel(r.to, true)}`;
}
