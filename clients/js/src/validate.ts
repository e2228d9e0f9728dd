// Argument checks. Every failure is a TypeError thrown at the call site, with a message that
// names the call and the argument.

import { WIRE_LIMITS } from './limits.js';

const EV = WIRE_LIMITS.event;

/** @internal The service's limits (limits.ts, generated from the service's schema), and the client's own. */
export const LIMITS = {
  nameLength: EV.event.maxLength,
  urlLength: EV.url.maxLength,
  sessionIdLength: EV.sessionId.maxLength,
  eventIdLength: EV.eventId.maxLength,
  userAgentLength: EV.userAgent.maxLength,
  propertyKeys: EV.properties.maxKeys,
  propertyKeyLength: EV.properties.maxKeyLength,
  /** The service refuses a property string longer than this. */
  propertyValueLength: EV.properties.maxValueLength,
  items: EV.properties.items.maxItems,
  /** The service refuses an `items` list longer than this once encoded. */
  itemsJsonLength: EV.properties.items.maxJsonLength,
  /** The service takes at most this many events a batch. */
  batchEvents: WIRE_LIMITS.body.maxBatchEvents,
  descriptionLength: 1000,
  /** Below the service's property value limit. */
  stackLength: 2048,
} as const;

type Json = string | number | boolean | null | Json[] | { [key: string]: Json };
/** @internal */
export type JsonObject = { [key: string]: Json };

/** @internal */
export function fail(where: string, message: string): never {
  throw new TypeError(`svc: ${where}: ${message}`);
}

/** @internal */
export function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'string') return v.length > 40 ? `a string of ${v.length} characters` : JSON.stringify(v);
  if (typeof v === 'number') return String(v);
  if (typeof v === 'object') {
    const p = Object.getPrototypeOf(v) as { constructor?: { name?: string } } | null;
    const n = p && p.constructor && p.constructor.name;
    return n && n !== 'Object' ? `a ${n}` : 'an object';
  }
  return typeof v;
}

/** @internal A plain object literal (or Object.create(null)), from any realm. */
export function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  const p = Object.getPrototypeOf(v) as object | null;
  return p === null || Object.getPrototypeOf(p) === null;
}

/** @internal A string of 1..max characters. */
export function checkString(where: string, what: string, v: unknown, max?: number): string {
  if (typeof v !== 'string' || v.length === 0) {
    fail(where, `${what} must be a non-empty string, got ${describe(v)}`);
  }
  if (max !== undefined && v.length > max) {
    fail(where, `${what} must be at most ${max} characters, got ${v.length}`);
  }
  return v;
}

/** @internal */
export function checkName(where: string, name: unknown): string {
  const n = checkString(where, 'event name', name, LIMITS.nameLength);
  if (n.trim() === '') fail(where, 'event name must not be blank');
  return n;
}

/** @internal A full URL (`https://...`) or a path (`/...`), as the service accepts. */
export function checkUrl(where: string, v: unknown): string {
  const u = checkString(where, 'url', v, LIMITS.urlLength);
  if (!(u.startsWith('/') || u.includes('://'))) {
    fail(where, `url must be a full URL (https://...) or a path (/...), got ${describe(u)}`);
  }
  return u;
}

/** @internal An IPv4 or IPv6 address. */
export function checkIp(where: string, v: unknown): string {
  const ip = checkString(where, 'ip', v);
  if (!/^[0-9A-Fa-f:.]{2,45}$/.test(ip)) fail(where, `ip must be an IPv4 or IPv6 address, got ${describe(ip)}`);
  return ip;
}

/** @internal A finite number, optionally >= 0 and/or whole. */
export function checkNumber(
  where: string,
  what: string,
  v: unknown,
  rule: { min0?: boolean; integer?: boolean } = {},
): number {
  if (typeof v !== 'number' || !Number.isFinite(v)) {
    fail(where, `${what} must be a finite number, got ${describe(v)}`);
  }
  if (rule.integer && !Number.isInteger(v)) fail(where, `${what} must be a whole number, got ${v}`);
  if (rule.min0 && v < 0) fail(where, `${what} must not be negative, got ${v}`);
  return v;
}

/** @internal An ISO 4217 code: three letters, sent in upper case. */
export function checkCurrency(where: string, v: unknown): string {
  if (typeof v !== 'string' || !/^[A-Za-z]{3}$/.test(v)) {
    fail(where, `currency must be a three-letter ISO 4217 code such as "EUR", got ${describe(v)}`);
  }
  return v.toUpperCase();
}

function scalar(where: string, what: string, v: unknown, maxLength?: number): string | number | boolean | null {
  if (typeof v === 'string') {
    if (maxLength !== undefined && v.length > maxLength) {
      fail(where, `${what} must be at most ${maxLength} characters, got ${v.length}`);
    }
    return v;
  }
  if (v === null || typeof v === 'boolean') return v;
  if (typeof v === 'number') return checkNumber(where, what, v);
  return fail(where, `${what} must be a string, number, boolean or null, got ${describe(v)}`);
}

/**
 * @internal A list of flat items. `strict` (the GA4 helpers) also requires `item_id` or
 * `item_name` on each item.
 */
export function checkItems(where: string, items: unknown, strict: boolean): JsonObject[] {
  if (!Array.isArray(items)) fail(where, `items must be an array, got ${describe(items)}`);
  if (items.length > LIMITS.items) fail(where, `items may hold at most ${LIMITS.items} items, got ${items.length}`);
  const list = items.map((item: unknown, i: number) => {
    const at = `items[${i}]`;
    if (!isPlainObject(item)) fail(where, `${at} must be a plain object, got ${describe(item)}`);
    const out: JsonObject = {};
    let n = 0;
    for (const key of Object.keys(item)) {
      const v = item[key];
      if (v === undefined) continue;
      if (++n > LIMITS.propertyKeys) fail(where, `${at} has more than ${LIMITS.propertyKeys} keys`);
      if (key === 'price') out[key] = checkNumber(where, `${at}.price`, v, { min0: true });
      else if (key === 'quantity') out[key] = checkNumber(where, `${at}.quantity`, v, { min0: true, integer: true });
      else out[key] = scalar(where, `${at}.${key}`, v);
    }
    if (strict) {
      const id = out['item_id'];
      const nm = out['item_name'];
      if (!(typeof id === 'string' && id !== '') && !(typeof nm === 'string' && nm !== '')) {
        fail(where, `${at} needs an item_id or an item_name (a non-empty string)`);
      }
    }
    return out;
  });
  const size = JSON.stringify(list).length;
  if (size > LIMITS.itemsJsonLength) {
    fail(where, `items must be at most ${LIMITS.itemsJsonLength} characters once encoded, got ${size}`);
  }
  return list;
}

/**
 * @internal Event properties: a plain object of at most 50 flat values; `items` may hold a list
 * of flat objects. `undefined` values are left out. Returns a copy, or undefined when empty.
 */
export function checkProperties(where: string, props: unknown, strictItems = false): JsonObject | undefined {
  if (props === undefined || props === null) return undefined;
  if (!isPlainObject(props)) fail(where, `properties must be a plain object, got ${describe(props)}`);
  const out: JsonObject = {};
  let n = 0;
  for (const key of Object.keys(props)) {
    const v = props[key];
    if (v === undefined) continue;
    if (++n > LIMITS.propertyKeys) {
      fail(where, `properties may have at most ${LIMITS.propertyKeys} keys`);
    }
    if (key === '' || key.length > LIMITS.propertyKeyLength) {
      fail(where, `property names must be 1-${LIMITS.propertyKeyLength} characters`);
    }
    out[key] =
      key === 'items' && Array.isArray(v)
        ? checkItems(where, v, strictItems)
        : scalar(where, `properties.${key}`, v, LIMITS.propertyValueLength);
  }
  return n === 0 ? undefined : out;
}

/** @internal Milliseconds since the epoch from a Date or a number. */
export function checkTimestamp(where: string, v: unknown): number {
  const ms = v instanceof Date ? v.getTime() : v;
  if (typeof ms !== 'number' || !Number.isFinite(ms)) {
    fail(where, `timestamp must be a valid Date or milliseconds since the epoch, got ${describe(v)}`);
  }
  if (ms < 1e11) fail(where, `timestamp must be in milliseconds (got ${ms}, which looks like seconds)`);
  return Math.floor(ms);
}

/** @internal Cuts a string to at most `max` UTF-16 units without splitting a surrogate pair. */
export function truncate(s: string, max: number): string {
  if (s.length <= max) return s;
  let end = max;
  const c = s.charCodeAt(end - 1);
  if (c >= 0xd800 && c <= 0xdbff) end--;
  return s.slice(0, end);
}
