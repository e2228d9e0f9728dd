// The wire format of POST /analytics at the edge: the origin's rules (src/svc/ingestion/wire.py),
// ported one for one, with the same messages, so that the edge can answer a bad body itself.
//
// The edge answers only what it is sure the origin would answer the same way. Whenever JSON
// as JavaScript reads it could differ from the origin's reading (invalid UTF-8, a number out
// of range, a lone surrogate, nesting past the origin's bound, property names that JavaScript
// reorders, a `ts` near the edge of its window, an `items` list near its size limit), the
// verdict is "forward" and the origin decides. tests/edge/test_wire_agreement.py runs a corpus
// of bodies through both and checks the answers are the same.

import format from './wire-format.json';

export const WIRE = format;

const EV = format.event;
const NESTING = format.body.maxNestingDepth;
/** Clock margin: a `ts` this close to either end of its window is left to the origin. */
const TS_MARGIN_MS = 60_000;

export interface ErrorBody {
  ok: false;
  error: { code: string; message: string; field?: string };
  accepted?: number;
  rejected?: { index: number; error: ErrorBody['error'] }[];
}

export type Verdict =
  | { kind: 'forward'; events: number }
  | { kind: 'answer'; status: number; body: ErrorBody };

export interface Limits {
  maxBodyBytes: number;
  maxBatchEvents: number;
}

class Invalid {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly message: string,
    readonly field: string,
  ) {}
  json(): ErrorBody['error'] {
    return { code: this.code, message: this.message, field: this.field };
  }
}

/** Thrown when the edge cannot be sure of the origin's answer. */
class Unsure {}
const UNSURE = new Unsure();

const invalid = (message: string, field: string) => new Invalid(400, 'invalid_request', message, field);

export function errorBody(status: number, code: string, message: string, field?: string): ErrorBody {
  const error: ErrorBody['error'] = { code, message };
  if (field !== undefined) error.field = field;
  return { ok: false, error };
}

/** Python's len(): code points, not UTF-16 units. */
function cpLength(s: string, limit: number): number {
  if (s.length <= limit) return s.length; // never more code points than units (limit 0: count)
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
    }
    n++;
  }
  return n;
}

// Python's str.isspace(): characters of bidirectional type WS, B or S, or category Zs.
const SPACE = /^[\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+$/;
const isSpace = (s: string) => SPACE.test(s);
// Python's re.match with `$`, which also matches before a final newline.
const IP = new RegExp(EV.ip.pattern.replace(/\$$/, '\\n?$'));
const INDEX_KEY = /^(0|[1-9][0-9]*)$/;

function optStr(obj: Record<string, unknown>, key: string, limit: number, truncate = false): void {
  const value = obj[key];
  if (value === null || value === undefined) return;
  if (typeof value !== 'string') throw invalid(`\`${key}\` must be a string`, key);
  if (!truncate && cpLength(value, limit) > limit) {
    throw invalid(`\`${key}\` is longer than ${limit} characters`, key);
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Throws an Invalid naming the first bad field, as the origin's validate_event. */
function validateEvent(obj: unknown, nowMs: number): void {
  if (!isObject(obj)) throw invalid('an event must be a JSON object', 'event');
  const name = obj['event'];
  if (typeof name !== 'string' || name === '' || isSpace(name)) {
    throw invalid('`event` is required: a non-empty string', 'event');
  }
  if (cpLength(name, EV.event.maxLength) > EV.event.maxLength) {
    throw invalid(`\`event\` is longer than ${EV.event.maxLength} characters`, 'event');
  }
  const url = obj['url'];
  if (typeof url !== 'string' || url === '' || isSpace(url)) {
    throw invalid('`url` is required: a full URL or a path', 'url');
  }
  if (cpLength(url, EV.url.maxLength) > EV.url.maxLength) {
    throw invalid(`\`url\` is longer than ${EV.url.maxLength} characters`, 'url');
  }
  if (!(url.startsWith('/') || url.includes('://'))) {
    throw invalid('`url` must be a full URL (https://...) or a path (/...)', 'url');
  }
  optStr(obj, 'sessionId', EV.sessionId.maxLength);
  optStr(obj, 'projectId', EV.projectId.maxLength);
  optStr(obj, 'referrer', EV.referrer.maxLength, true);
  optStr(obj, 'eventId', EV.eventId.maxLength);
  optStr(obj, 'userAgent', EV.userAgent.maxLength);
  const ip = obj['ip'];
  if (ip !== null && ip !== undefined) {
    optStr(obj, 'ip', EV.ip.maxLength);
    if (ip !== '' && !IP.test(ip as string)) throw invalid('`ip` must be an IPv4 or IPv6 address', 'ip');
  }
  const ts = obj['ts'];
  if (ts !== null && ts !== undefined) {
    if (typeof ts !== 'number' || !Number.isFinite(ts)) {
      throw invalid('`ts` must be an integer: milliseconds since the epoch', 'ts');
    }
    const ms = Math.trunc(ts);
    const low = nowMs - EV.ts.pastWindowMs;
    const high = nowMs + EV.ts.futureWindowMs;
    if (ms < low - TS_MARGIN_MS) throw invalid('`ts` is more than 7 days in the past', 'ts');
    if (ms > high + TS_MARGIN_MS) throw invalid('`ts` is more than 5 minutes in the future', 'ts');
    // near either end of the window the two clocks may disagree
    if (ms < low + TS_MARGIN_MS || ms > high - TS_MARGIN_MS) throw UNSURE;
  }
  const screen = obj['screen'];
  if (screen !== null && screen !== undefined) {
    if (
      typeof screen !== 'number' ||
      !Number.isInteger(screen) ||
      screen < EV.screen.minimum ||
      screen > EV.screen.maximum
    ) {
      throw invalid(
        `\`screen\` must be a width in pixels (${EV.screen.minimum}-${EV.screen.maximum})`,
        'screen',
      );
    }
  }
  const props = obj['properties'];
  if (props !== null && props !== undefined) properties(props);
}

function properties(value: unknown): void {
  const P = EV.properties;
  if (!isObject(value)) throw invalid('`properties` must be an object', 'properties');
  const keys = Object.keys(value);
  if (keys.length > P.maxKeys) {
    throw invalid(`\`properties\` has ${keys.length} keys; at most ${P.maxKeys} are allowed`, 'properties');
  }
  // JavaScript lists integer-like names first; the origin reads them in the body's order.
  const reordered = keys.some((k) => INDEX_KEY.test(k));
  try {
    for (const key of keys) {
      if (key === '' || cpLength(key, P.maxKeyLength) > P.maxKeyLength) {
        throw invalid(`property names are 1-${P.maxKeyLength} characters`, 'properties');
      }
      const item = value[key];
      const where = `properties.${key}`;
      if (typeof item === 'string') {
        if (cpLength(item, P.maxValueLength) > P.maxValueLength) {
          throw invalid(`\`${where}\` is longer than ${P.maxValueLength} characters`, where);
        }
      } else if (item === null || typeof item === 'boolean' || typeof item === 'number') {
        // numbers: every finite number is kept (the non-finite ones are sent to the origin)
      } else if (key === 'items' && Array.isArray(item)) {
        items(item, where);
      } else {
        throw invalid(`\`${where}\` must be a string, number, boolean or null`, where);
      }
    }
  } catch (e) {
    if (reordered && e instanceof Invalid) throw UNSURE;
    throw e;
  }
}

function items(list: unknown[], where: string): void {
  const I = EV.properties.items;
  if (list.length > I.maxItems) throw invalid(`\`${where}\` holds at most ${I.maxItems} items`, where);
  list.forEach((item, i) => {
    if (!isObject(item)) throw invalid(`\`${where}[${i}]\` must be an object`, where);
    const keys = Object.keys(item);
    for (const k of keys) {
      const v = item[k];
      if (!(v === null || typeof v === 'string' || typeof v === 'boolean' || typeof v === 'number')) {
        if (keys.some((key) => INDEX_KEY.test(key))) throw UNSURE;
        throw invalid(`\`${where}[${i}].${k}\` must be a string, number, boolean or null`, where);
      }
    }
  });
  // The origin measures its own JSON encoding; ours differs in number formatting and escapes.
  const text = JSON.stringify(list);
  const size = cpLength(text, 0);
  if (size > I.maxJsonLength * 1.1) throw invalid(`\`${where}\` is too large`, where);
  if (size > I.maxJsonLength * 0.9) throw UNSURE;
}

const WELL_FORMED = /^(?:[^\ud800-\udfff]|[\ud800-\udbff][\udc00-\udfff])*$/;

/** Whether the origin reads the parsed document exactly as JavaScript did: no number out of
 * range, no lone surrogate, nesting within the origin's bound. */
function plain(doc: unknown, depth = 1): boolean {
  if (depth >= NESTING) return false;
  if (typeof doc === 'number') return Number.isFinite(doc);
  if (typeof doc === 'string') return WELL_FORMED.test(doc);
  if (Array.isArray(doc)) return doc.every((d) => plain(d, depth + 1));
  if (isObject(doc)) {
    for (const k of Object.keys(doc)) {
      if (!WELL_FORMED.test(k) || !plain(doc[k], depth + 1)) return false;
    }
  }
  return true;
}

const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

function answer(e: Invalid): Verdict {
  return { kind: 'answer', status: e.status, body: errorBody(e.status, e.code, e.message, e.field) };
}

/** Python's bytes.strip() whitespace. */
function blank(body: Uint8Array): boolean {
  for (const b of body) {
    if (!(b === 0x20 || (b >= 0x09 && b <= 0x0d))) return false;
  }
  return true;
}

/**
 * The edge's verdict on a POST /analytics body: answer it here (400 or 413, the origin's
 * answer), or forward it (valid, partly valid, or not sure).
 */
export function judge(body: Uint8Array, limits: Limits, nowMs: number): Verdict {
  if (blank(body)) return answer(invalid('the request body is empty; send a JSON event', 'body'));
  let text: string;
  try {
    text = decoder.decode(body);
  } catch {
    return { kind: 'forward', events: 0 }; // invalid UTF-8: the origin keeps the good events
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    const why = e instanceof Error ? e.message : String(e);
    return answer(invalid(`the body is not valid JSON: ${why}`, 'body'));
  }
  const verdict = afterParse(doc, limits, nowMs);
  // JavaScript read the document as the origin does only if it is "plain"; else let it decide
  return verdict.kind === 'answer' && !plain(doc) ? forward(0) : verdict;
}

function afterParse(doc: unknown, limits: Limits, nowMs: number): Verdict {
  let events: unknown[];
  let batch: boolean;
  if (Array.isArray(doc)) {
    events = doc;
    batch = true;
  } else if (isObject(doc) && 'events' in doc && !('event' in doc)) {
    if (!Array.isArray(doc['events'])) {
      return answer(invalid('`events` must be an array of events', 'events'));
    }
    events = doc['events'];
    batch = true;
  } else if (isObject(doc)) {
    events = [doc];
    batch = false;
  } else {
    return answer(
      invalid('the body must be an event object, an array of events or {"events": [...]}', 'body'),
    );
  }
  if (batch && events.length === 0) return answer(invalid('the batch has no events', 'events'));
  if (events.length > limits.maxBatchEvents) {
    return answer(
      new Invalid(
        413,
        'payload_too_large',
        `a batch holds at most ${limits.maxBatchEvents} events; this one has ${events.length}`,
        'events',
      ),
    );
  }
  const errors: [number, Invalid][] = [];
  for (let i = 0; i < events.length; i++) {
    try {
      validateEvent(events[i], nowMs);
    } catch (e) {
      if (e instanceof Invalid) errors.push([i, e]);
      else if (e === UNSURE) return forward(events.length);
      else throw e;
    }
  }
  // Any good event goes to the origin, which stores it and reports the bad ones.
  if (errors.length < events.length) return forward(events.length);
  const first = errors[0]![1];
  if (!batch) return answer(first);
  const body = errorBody(first.status, first.code, `no event of the batch was accepted: ${first.message}`);
  body.accepted = 0;
  body.rejected = errors.map(([index, e]) => ({ index, error: e.json() }));
  return { kind: 'answer', status: first.status, body };
}

function forward(events: number): Verdict {
  return { kind: 'forward', events };
}
