// svc at the edge: one fetch handler, the same on every platform (the adapters in adapters/
// only say who the visitor is and where the configuration comes from).
//
//   OPTIONS /analytics     CORS preflight, answered here as the origin answers it
//   POST /analytics        validated here (400/413 answered here, in the origin's JSON error
//                          shape); the rest forwarded to the origin with the original credential
//                          and the visitor's address and location in signed headers; the
//                          origin's answer is the answer (a 200 means the event is on its disk)
//   GET|HEAD /svc/js       the browser script, from the origin, kept here and revalidated with
//                          its ETag
//   GET|HEAD /svc/js/<names>
//                          its builds with opt-in extensions (`engagement,outbound`): each
//                          kept and revalidated on its own, under the path with the names
//                          sorted and without repeats (the origin serves the same bytes for
//                          every order); a malformed list is the origin's 404 answered here, a
//                          well-formed unknown name the origin's 404 passed on (not kept)
//
// When the origin cannot be reached: 503 {"ok":false,"error":{"code":"unavailable",...}} with
// Retry-After. See docs/edge.md.

import { edgeHeaders, type Visitor } from './sign';
import { errorBody, judge, WIRE, type ErrorBody, type Limits } from './wire';

export type { Visitor } from './sign';

export interface EdgeConfig {
  /** The origin's base URL: `https://svc.example.com` */
  origin: string;
  /** The secret shared with the origin (SVC_EDGE_SECRET); empty: no signed headers. */
  secret: string;
  /** The project this deployment serves (informational: the origin checks every key). */
  project: string;
  maxBodyBytes: number;
  maxBatchEvents: number;
  /** How long to wait for the origin before answering 503 (ms). */
  originTimeoutMs: number;
  /** Seconds the script is kept before revalidation; -1: the origin's Cache-Control max-age. */
  scriptTtlSeconds: number;
  /** Seconds to tell clients to wait when the origin cannot be reached. */
  retryAfterSeconds: number;
  /** The platform, in the Svc-Edge header of every answer. */
  platform: string;
}

export type EnvLike = Record<string, unknown> | undefined | null;

/** The configuration: each SVC_* variable (or binding) of `env`, else the value baked into
 * the bundle by `svcm deploy`, else the default. */
export function configFrom(env: EnvLike, baked: Record<string, unknown>, platform: string): EdgeConfig {
  const get = (name: string): string => {
    const v = env && typeof env === 'object' ? env[name] : undefined;
    if (typeof v === 'string' && v !== '') return v;
    const b = baked[name];
    return typeof b === 'string' ? b : typeof b === 'number' ? String(b) : '';
  };
  const num = (name: string, fallback: number): number => {
    const raw = get(name);
    const n = raw === '' ? NaN : Number(raw);
    return Number.isFinite(n) ? n : fallback;
  };
  return {
    origin: get('SVC_ORIGIN').replace(/\/+$/, ''),
    secret: get('SVC_EDGE_SECRET'),
    project: get('SVC_PROJECT'),
    maxBodyBytes: num('SVC_MAX_BODY_BYTES', WIRE.body.maxBytes),
    maxBatchEvents: num('SVC_MAX_BATCH_EVENTS', WIRE.body.maxBatchEvents),
    originTimeoutMs: num('SVC_ORIGIN_TIMEOUT_MS', 10_000),
    scriptTtlSeconds: num('SVC_SCRIPT_TTL_SECONDS', -1),
    retryAfterSeconds: num('SVC_RETRY_AFTER_SECONDS', 10),
    platform,
  };
}

/** The origin's CORS headers (src/svc/http/common.py CORS_HEADERS). */
export const CORS: Record<string, string> = {
  'Access-Control-Allow-Origin': '*',
  'Access-Control-Allow-Methods': 'GET, POST, PATCH, DELETE, OPTIONS',
  'Access-Control-Allow-Headers': 'Authorization, Content-Type',
  'Access-Control-Expose-Headers':
    'Retry-After, X-Svc-Dropped, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, RateLimit-Policy, Svc-Quota-Warning, X-Request-Id',
  'Access-Control-Max-Age': '86400',
};

// Not passed on from the origin's answer: hop-by-hop, and what the runtime sets itself.
const HOP = new Set([
  'connection',
  'keep-alive',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'proxy-authenticate',
  'proxy-authorization',
  'content-length',
  'content-encoding',
  'date',
  'server',
]);

const SCRIPT_HEADERS = [
  'content-type',
  'etag',
  'cache-control',
  'access-control-allow-origin',
  'cross-origin-resource-policy',
  'x-content-type-options',
  'last-modified',
];

interface CachedScript {
  etag: string;
  body: Uint8Array<ArrayBuffer>;
  headers: [string, string][];
  freshUntil: number;
}

/** How many scripts are kept at most, the least recently served dropped first: the origin
 * builds 32 (src/svc/http/script.py EXTENSIONS: every combination of 5), kept under their
 * canonical paths, so 64 leaves room for builds to come without letting requests grow memory. */
export const MAX_KEPT_SCRIPTS = 64;

/** One extension's name as the origin could ever name it (lower-case letters, digits, `-`). */
const EXTENSION_NAME = /^[a-z0-9-]{1,40}$/;
/** The longest name list taken: all five names are 39 characters. */
const MAX_NAMES_CHARS = 256;

/** `/svc/js` or `/svc/js/<names>`: the canonical path to keep and fetch (names sorted, without
 * repeats, as the origin's parse_extensions reads them), `{ bad }` when the list cannot name an
 * extension (the origin's 404 for it, answered here), null for any other path. */
export function scriptPath(pathname: string): { path: string } | { bad: string } | null {
  if (pathname === '/svc/js') return { path: pathname };
  if (!pathname.startsWith('/svc/js/')) return null;
  let names: string;
  try {
    names = decodeURIComponent(pathname.slice('/svc/js/'.length));
  } catch {
    names = '\u0000';
  }
  const list = names.split(',');
  const bad = names.length > MAX_NAMES_CHARS ? names : list.find((n) => !EXTENSION_NAME.test(n));
  if (bad !== undefined) {
    const shown = bad.length <= 40 ? bad : bad.slice(0, 40) + '...';
    return {
      bad:
        `\`${shown}\` is not an extension of the browser script: the extensions are lower-case ` +
        'names, comma-separated, e.g. /svc/js/engagement,outbound',
    };
  }
  return { path: '/svc/js/' + [...new Set(list)].sort().join(',') };
}

export type Handler = ((request: Request, visitor: Visitor | null) => Promise<Response>) & {
  config: EdgeConfig;
};

class ReadLimit extends Error {}

const perf = (globalThis as { performance?: { now(): number } }).performance;
/** Milliseconds, as finely as the runtime tells (Workers advance their clock only on I/O). */
const now = (): number => (perf ? perf.now() : Date.now());
const ms = (d: number): string => d.toFixed(3);

async function readBody(request: Request, limit: number): Promise<Uint8Array<ArrayBuffer>> {
  const declared = request.headers.get('content-length');
  if (declared !== null && /^\s*\d+\s*$/.test(declared) && Number(declared) > limit) throw new ReadLimit();
  if (request.body === null) return new Uint8Array(0);
  const reader = request.body.getReader();
  const chunks: Uint8Array<ArrayBuffer>[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => undefined);
      throw new ReadLimit();
    }
    chunks.push(value as Uint8Array<ArrayBuffer>);
  }
  if (chunks.length === 1) return chunks[0]!;
  const out = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}

function etagMatches(ifNoneMatch: string, etag: string): boolean {
  if (ifNoneMatch.trim() === '*') return true;
  const opaque = etag.replace(/^W\//, '');
  return ifNoneMatch.split(',').some((c) => c.trim().replace(/^W\//, '') === opaque);
}

function maxAge(cacheControl: string | null): number {
  const m = /(?:^|,)\s*max-age=(\d+)/i.exec(cacheControl ?? '');
  return m ? Number(m[1]) : 0;
}

export function createHandler(config: EdgeConfig): Handler {
  const limits: Limits = { maxBodyBytes: config.maxBodyBytes, maxBatchEvents: config.maxBatchEvents };
  // The kept scripts by canonical path, least recently served first; one refresh in flight
  // per path, shared by every request that finds it stale.
  const scripts = new Map<string, CachedScript>();
  const refreshing = new Map<string, Promise<[string, CachedScript]>>();
  const keep = (path: string, script: CachedScript): void => {
    scripts.delete(path);
    scripts.set(path, script);
    while (scripts.size > MAX_KEPT_SCRIPTS) scripts.delete(scripts.keys().next().value!);
  };

  const json = (status: number, body: ErrorBody, extra: Record<string, string> = {}): Response =>
    new Response(JSON.stringify(body), {
      status,
      headers: { 'content-type': 'application/json', ...CORS, 'svc-edge': `${config.platform}; answered`, ...extra },
    });
  // Server-Timing: the edge's own processing, and the wait for the origin (bench/edge_bench.py)
  const timed = (response: Response, edge: number, origin?: number): Response => {
    response.headers.set(
      'server-timing',
      origin === undefined ? `edge;dur=${ms(edge)}` : `edge;dur=${ms(edge)}, origin;dur=${ms(origin)}`,
    );
    return response;
  };

  const unavailable = (why: string): Response =>
    json(
      503,
      errorBody(503, 'unavailable', `the analytics service cannot be reached (${why}); retry later`),
      { 'retry-after': String(config.retryAfterSeconds) },
    );

  async function originFetch(path: string, init: RequestInit): Promise<Response> {
    if (!config.origin) throw new Error('no origin configured (SVC_ORIGIN)');
    const signal = AbortSignal.timeout(config.originTimeoutMs);
    return fetch(config.origin + path, { ...init, signal, redirect: 'manual' });
  }

  async function ingest(request: Request, url: URL, visitor: Visitor | null): Promise<Response> {
    const start = now();
    const answer = await forward(request, url, visitor, start);
    return answer instanceof Response ? timed(answer, now() - start) : timed(answer[0], answer[1], answer[2]);
  }

  /** The edge's answer, or the origin's with the edge's time and the origin's time. */
  async function forward(
    request: Request,
    url: URL,
    visitor: Visitor | null,
    start: number,
  ): Promise<Response | [Response, number, number]> {
    const authorization = request.headers.get('authorization');
    const key = url.searchParams.get('key');
    // The origin's first checks (svc.http.analytics._ingest_principal, svc.auth.bearer)
    if (authorization === null || authorization === '') {
      if (!key) {
        return json(
          401,
          errorBody(401, 'missing_api_key', 'an API key is required: send `Authorization: Bearer svc_live_...`'),
        );
      }
    } else {
      const space = authorization.indexOf(' ');
      const scheme = space < 0 ? authorization : authorization.slice(0, space);
      const token = space < 0 ? '' : authorization.slice(space + 1);
      if (scheme.toLowerCase() !== 'bearer' || token.trim() === '') {
        return json(401, errorBody(401, 'invalid_api_key', 'the Authorization header must be `Bearer <API key>`'));
      }
    }
    let body: Uint8Array<ArrayBuffer>;
    try {
      body = await readBody(request, config.maxBodyBytes);
    } catch (e) {
      if (e instanceof ReadLimit) {
        return json(413, errorBody(413, 'payload_too_large', `the body is larger than ${config.maxBodyBytes} bytes`));
      }
      return json(400, errorBody(400, 'invalid_request', 'the body could not be read', 'body'));
    }
    const verdict = judge(body, limits, Date.now());
    if (verdict.kind === 'answer') return json(verdict.status, verdict.body);

    const target = url.pathname + url.search;
    const userAgent = request.headers.get('user-agent') ?? '';
    const headers: Record<string, string> = {
      'content-type': request.headers.get('content-type') ?? 'application/json',
    };
    if (authorization) headers['authorization'] = authorization;
    if (userAgent) headers['user-agent'] = userAgent;
    if (config.secret && visitor && visitor.ip) {
      Object.assign(
        headers,
        await edgeHeaders(
          config.secret,
          { method: 'POST', target, body, authorization: authorization ?? '', userAgent },
          visitor,
        ),
      );
    }
    let answer: Response;
    const sent = now();
    try {
      answer = await originFetch(target, { method: 'POST', headers, body });
    } catch (e) {
      return unavailable(e instanceof Error && e.name === 'TimeoutError' ? 'timed out' : 'no connection');
    }
    const out = new Headers();
    answer.headers.forEach((value, name) => {
      if (!HOP.has(name)) out.append(name, value);
    });
    out.set('svc-edge', `${config.platform}; forwarded`);
    const data = await answer.arrayBuffer().catch(() => null);
    if (data === null) return unavailable('the answer was cut off');
    return [new Response(data, { status: answer.status, headers: out }), sent - start, now() - sent];
  }

  /** Refresh the script kept under `path` from the origin: MISS or REVALIDATED, and the script
   * now kept; throws when the origin cannot be reached or does not answer 200 or 304. */
  async function refresh(path: string): Promise<[string, CachedScript]> {
    const script = scripts.get(path);
    const headers: Record<string, string> = { 'accept-encoding': 'identity' };
    if (script) headers['if-none-match'] = script.etag;
    const answer = await originFetch(path, { method: 'GET', headers });
    const now = Date.now();
    const ttl = (cc: string | null) => (config.scriptTtlSeconds >= 0 ? config.scriptTtlSeconds : maxAge(cc)) * 1000;
    if (answer.status === 304 && script) {
      await answer.arrayBuffer().catch(() => null);
      script.freshUntil = now + ttl(answer.headers.get('cache-control'));
      keep(path, script);
      return ['REVALIDATED', script];
    }
    if (answer.status !== 200) throw await OriginStatus.read(answer);
    const body = new Uint8Array(await answer.arrayBuffer());
    const kept: [string, string][] = [];
    for (const name of SCRIPT_HEADERS) {
      const v = answer.headers.get(name);
      if (v !== null) kept.push([name, v]);
    }
    const fresh: CachedScript = {
      etag: answer.headers.get('etag') ?? '',
      body,
      headers: kept,
      freshUntil: now + ttl(answer.headers.get('cache-control')),
    };
    keep(path, fresh);
    return ['MISS', fresh];
  }

  async function serveScript(request: Request, path: string): Promise<Response> {
    let state = 'HIT';
    let kept = scripts.get(path);
    if (!kept || Date.now() >= kept.freshUntil) {
      let pending = refreshing.get(path);
      if (!pending) {
        pending = refresh(path).finally(() => refreshing.delete(path));
        refreshing.set(path, pending);
      }
      try {
        [state, kept] = await pending;
      } catch (e) {
        if (!kept) {
          if (e instanceof OriginStatus) return e.passOn(config.platform);
          return unavailable(e instanceof Error && e.name === 'TimeoutError' ? 'timed out' : 'no connection');
        }
        state = 'STALE'; // the origin is away: serve what we have (stale-if-error)
      }
    } else {
      keep(path, kept); // served: the most recently used
    }
    const headers = new Headers(kept.headers);
    headers.set('svc-edge', `${config.platform}; script`);
    headers.set('svc-edge-cache', state);
    const inm = request.headers.get('if-none-match');
    if (inm !== null && kept.etag && etagMatches(inm, kept.etag)) {
      headers.delete('content-type');
      return new Response(null, { status: 304, headers });
    }
    headers.set('content-length', String(kept.body.byteLength));
    return new Response(request.method === 'HEAD' ? null : kept.body, { status: 200, headers });
  }

  const handle = async (request: Request, visitor: Visitor | null): Promise<Response> => {
    const url = new URL(request.url);
    const method = request.method.toUpperCase();
    if (url.pathname === '/analytics') {
      if (method === 'POST') return ingest(request, url, visitor);
      if (method === 'OPTIONS') return new Response(null, { status: 204, headers: CORS });
      return json(405, errorBody(405, 'method_not_allowed', `${method} is not allowed on /analytics; use POST`), {
        allow: 'POST, OPTIONS',
      });
    }
    const script = scriptPath(url.pathname);
    if (script !== null) {
      if (method !== 'GET' && method !== 'HEAD') {
        return json(405, errorBody(405, 'method_not_allowed', `${method} is not allowed on ${url.pathname}; use GET`), {
          allow: 'GET, HEAD',
        });
      }
      if ('bad' in script) return json(404, errorBody(404, 'not_found', script.bad, 'extensions'));
      return serveScript(request, script.path);
    }
    return json(
      404,
      errorBody(
        404,
        'not_found',
        `${url.pathname} is not served here: this edge serves POST /analytics, GET /svc/js and GET /svc/js/<extensions>`,
      ),
    );
  };
  return Object.assign(handle, { config });
}

/** The origin's answer other than 200 or 304 to a script's refresh, read whole: every request
 * that waited on that refresh passes on a copy (a 404 naming an unknown extension). */
class OriginStatus extends Error {
  private constructor(
    readonly status: number,
    readonly headers: [string, string][],
    readonly body: ArrayBuffer,
  ) {
    super(`origin answered ${status}`);
  }
  static async read(answer: Response): Promise<OriginStatus> {
    const headers: [string, string][] = [];
    answer.headers.forEach((v, k) => {
      if (!HOP.has(k)) headers.push([k, v]);
    });
    return new OriginStatus(answer.status, headers, await answer.arrayBuffer());
  }
  passOn(platform: string): Response {
    const headers = new Headers(this.headers);
    headers.set('svc-edge', `${platform}; forwarded`);
    return new Response(this.body.slice(0), { status: this.status, headers });
  }
}
