// Filters as the API takes them: `<dimension>:<op>:<value>`, repeatable, all must hold.
// `prop:<key>` is a dimension with a colon of its own.

export const OPS = ["is", "is_not", "contains", "not_contains", "matches", "not_matches"] as const;
export type Op = (typeof OPS)[number];

export const OP_LABELS: Record<Op, string> = {
  is: "is",
  is_not: "is not",
  contains: "contains",
  not_contains: "does not contain",
  matches: "matches",
  not_matches: "does not match",
};

export const DIMENSIONS: Record<string, string> = {
  page: "Page",
  entry_page: "Entry page",
  exit_page: "Exit page",
  hostname: "Hostname",
  source: "Source",
  channel: "Channel",
  referrer: "Referrer",
  utm_source: "UTM source",
  utm_medium: "UTM medium",
  utm_campaign: "UTM campaign",
  utm_content: "UTM content",
  utm_term: "UTM term",
  country: "Country",
  region: "Region",
  city: "City",
  browser: "Browser",
  browser_version: "Browser version",
  os: "Operating system",
  os_version: "OS version",
  device: "Device",
  event: "Event",
};

/** The dashboard's names of the channels svc assigns (docs/api.md, "Channels"). */
export const CHANNELS: Record<string, string> = {
  direct: "Direct",
  organic_search: "Organic search",
  paid_search: "Paid search",
  organic_social: "Organic social",
  paid_social: "Paid social",
  organic_video: "Organic video",
  paid_video: "Paid video",
  organic_shopping: "Organic shopping",
  paid_shopping: "Paid shopping",
  ai_assistants: "AI assistants",
  email: "Email",
  referral: "Referral",
  affiliates: "Affiliates",
  display: "Display",
  sms: "SMS",
  audio: "Audio",
  mobile_push_notifications: "Mobile push notifications",
  cross_network: "Cross-network",
  unassigned: "Unassigned",
};

/** A value svc names itself as words: "mobile" -> "Mobile", "" -> "(none)". */
export function words(v: string): string {
  if (!v) return "(none)";
  const s = v.replace(/_/g, " ");
  return s.charAt(0).toUpperCase() + s.slice(1);
}

export interface Filter {
  dim: string;
  op: Op;
  value: string;
}

export function dimensionLabel(dim: string): string {
  if (dim.startsWith("prop:")) return `Property ${dim.slice(5)}`;
  return DIMENSIONS[dim] ?? dim;
}

export function parseFilter(s: string): Filter | null {
  const parts = s.split(":");
  let i = 1;
  if (parts[0] === "prop" && parts.length >= 4) i = 2;
  const dim = parts.slice(0, i).join(":");
  const op = parts[i] as Op;
  if (!dim || !OPS.includes(op)) return null;
  if (!(dim in DIMENSIONS) && !dim.startsWith("prop:")) return null;
  return { dim, op, value: parts.slice(i + 1).join(":") };
}

export function formatFilter(f: Filter): string {
  return `${f.dim}:${f.op}:${f.value}`;
}

/** The filters with `f` added; an `is` filter replaces another `is` on the same dimension. */
export function withFilter(filters: string[], f: Filter): string[] {
  const kept = filters.filter((s) => {
    const p = parseFilter(s);
    return !(p && p.dim === f.dim && (p.op === f.op || (p.op === "is" && f.op === "is")));
  });
  return [...kept, formatFilter(f)];
}

export function activeValue(filters: string[], dim: string): string | null {
  for (const s of filters) {
    const p = parseFilter(s);
    if (p && p.dim === dim && p.op === "is") return p.value;
  }
  return null;
}

/** A goal `event:signup` or `page:/pricing*` as the filter that shows its visitors. */
export function goalFilter(goal: string): Filter | null {
  const i = goal.indexOf(":");
  if (i < 0) return null;
  const kind = goal.slice(0, i);
  const value = goal.slice(i + 1);
  if (kind === "event") return { dim: "event", op: "is", value };
  if (kind === "page") {
    if (!value.includes("*")) return { dim: "page", op: "is", value };
    const re = value
      .split("*")
      .map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))
      .join(".*");
    return { dim: "page", op: "matches", value: `^${re}$` };
  }
  return null;
}
