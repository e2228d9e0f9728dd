// Numbers as a person reads them.

const exact = new Intl.NumberFormat(undefined);
const compact = new Intl.NumberFormat(undefined, { notation: "compact", maximumFractionDigits: 1 });

/** Exact up to 99,999; "123K", "4.5M" above. */
export function num(n: number | null | undefined): string {
  if (n === null || n === undefined || Number.isNaN(n)) return "–";
  return Math.abs(n) >= 100_000 ? compact.format(n) : exact.format(n);
}

export function exactNum(n: number): string {
  return exact.format(n);
}

/**
 * A duration in seconds as every panel writes it: "180ms" under a second, "4.2s" under ten,
 * "45s", "2m 08s", "1h 02m". The value is rounded to what is shown before it is split into
 * units, so 59.96 s is "1m 00s" (not "60.0s") and 119.6 s "2m 00s" (not "1m 60s").
 */
export function duration(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return "–";
  if (seconds < 0) return `-${duration(-seconds)}`;
  const ms = Math.round(seconds * 1000);
  if (ms === 0) return "0s";
  if (ms < 1000) return `${ms}ms`;
  const tenths = Math.round(seconds * 10);
  if (tenths < 100) return `${(tenths / 10).toFixed(1)}s`;
  const s = Math.round(seconds);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, "0")}s`;
  const m = Math.round(seconds / 60);
  return `${Math.floor(m / 60)}h ${String(m % 60).padStart(2, "0")}m`;
}

/** "12.3%" or 12.3 or 0.123 (a share) -> 12.3. */
export function percentValue(v: string | number | null | undefined, share = false): number {
  if (v === null || v === undefined) return 0;
  if (typeof v === "number") return share && v <= 1 ? v * 100 : v;
  const n = Number.parseFloat(v);
  return Number.isNaN(n) ? 0 : n;
}

export function pct(v: number, digits = 1): string {
  return `${v.toFixed(digits)}%`;
}

export function money(amount: number, currency: string): string {
  try {
    return new Intl.NumberFormat(undefined, { style: "currency", currency }).format(amount);
  } catch {
    return `${amount.toFixed(2)} ${currency}`;
  }
}

let regionNames: Intl.DisplayNames | null | undefined;

/** "DE" -> "Germany". */
export function countryName(code: string): string {
  if (!code) return "Unknown";
  if (regionNames === undefined) {
    try {
      regionNames = new Intl.DisplayNames(undefined, { type: "region" });
    } catch {
      regionNames = null;
    }
  }
  try {
    return regionNames?.of(code.toUpperCase()) ?? code;
  } catch {
    return code;
  }
}

/** "DE" -> the flag emoji made of two regional indicator symbols. */
export function flag(code: string): string {
  if (!/^[A-Za-z]{2}$/.test(code)) return "";
  const base = 0x1f1e6 - 65;
  const up = code.toUpperCase();
  return String.fromCodePoint(base + up.charCodeAt(0), base + up.charCodeAt(1));
}
