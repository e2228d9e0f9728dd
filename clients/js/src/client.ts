import { SvcError, type RejectedEvent } from './errors.js';
import { host, idleTimer, inBrowser, offBeforeExit, onBeforeExit, utf8Length, uuid } from './runtime.js';
import type {
  ClientOptions,
  ClientStats,
  EventOptions,
  ExceptionOptions,
  FetchInit,
  FetchLike,
  FetchResponse,
  FlushOptions,
  PurchaseOptions,
  SvcClient,
} from './types.js';
import {
  LIMITS,
  checkCurrency,
  checkItems,
  checkName,
  checkNumber,
  checkProperties,
  checkString,
  checkIp,
  checkTimestamp,
  checkUrl,
  describe,
  fail,
  isPlainObject,
  truncate,
  type JsonObject,
} from './validate.js';

/** The version of this library. */
export const VERSION = '0.1.0';

/** A request body stays under this, below the service's 1 MiB limit. */
const MAX_BODY_BYTES = 1_000_000;
/** The most events the service takes in a batch. */
const MAX_BATCH_SIZE = LIMITS.batchEvents;
/** Browsers cap the bodies of `keepalive` requests at 64 KiB in all. */
const KEEPALIVE_MAX_BYTES = 60_000;
const DEFAULT_SHUTDOWN_TIMEOUT = 10_000;

interface Queued {
  seq: number;
  id: string;
  name: string;
  json: string;
  bytes: number;
}

interface Outcome {
  /** 0 when no HTTP answer came (network error, timeout, abort). */
  status: number;
  body?: unknown;
  retryAfter?: number;
  error?: SvcError;
}

type Kind = 's' | 'n' | 'n0' | 'cur' | 'items';

/** How the GA4 helpers check the parameters GA4 defines; others pass as plain properties. */
const GA4_KINDS: Record<string, Kind> = {
  method: 's',
  search_term: 's',
  currency: 'cur',
  value: 'n0',
  items: 'items',
  item_list_id: 's',
  item_list_name: 's',
  coupon: 's',
  shipping_tier: 's',
  payment_type: 's',
  transaction_id: 's',
  affiliation: 's',
  shipping: 'n0',
  tax: 'n0',
  content_type: 's',
  content_id: 's',
  item_id: 's',
  item_name: 's',
  lead_source: 's',
  creative_name: 's',
  creative_slot: 's',
  promotion_id: 's',
  promotion_name: 's',
  level: 'n',
  character: 's',
  score: 'n',
  virtual_currency_name: 's',
  achievement_id: 's',
  group_id: 's',
};

/** Helper method -> [GA4 event name, required parameters, currency required with value]. */
const GA4_HELPERS: Record<string, [string, string[], boolean]> = {
  login: ['login', [], false],
  signUp: ['sign_up', [], false],
  search: ['search', ['search_term'], false],
  viewItem: ['view_item', ['items'], true],
  viewItemList: ['view_item_list', ['items'], false],
  selectItem: ['select_item', ['items'], false],
  addToCart: ['add_to_cart', ['items'], true],
  removeFromCart: ['remove_from_cart', ['items'], true],
  addToWishlist: ['add_to_wishlist', ['items'], true],
  beginCheckout: ['begin_checkout', ['items'], true],
  addShippingInfo: ['add_shipping_info', ['items'], true],
  addPaymentInfo: ['add_payment_info', ['items'], true],
  refund: ['refund', ['transaction_id'], true],
  share: ['share', [], false],
  generateLead: ['generate_lead', [], true],
  selectContent: ['select_content', [], false],
  viewPromotion: ['view_promotion', [], false],
  levelUp: ['level_up', [], false],
  postScore: ['post_score', ['score'], false],
  earnVirtualCurrency: ['earn_virtual_currency', [], false],
  spendVirtualCurrency: ['spend_virtual_currency', ['value', 'virtual_currency_name'], false],
  unlockAchievement: ['unlock_achievement', ['achievement_id'], false],
  joinGroup: ['join_group', [], false],
};

function ga4Params(where: string, params: unknown, required: string[], money: boolean): JsonObject | undefined {
  if (params === undefined || params === null) {
    if (required.length > 0) fail(where, `params must be an object with ${required.join(', ')}`);
    return undefined;
  }
  if (!isPlainObject(params)) fail(where, `params must be a plain object, got ${describe(params)}`);
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(params)) {
    const v = params[key];
    if (v === undefined) continue;
    switch (GA4_KINDS[key]) {
      case 's':
        out[key] = checkString(where, key, v);
        break;
      case 'n':
        out[key] = checkNumber(where, key, v);
        break;
      case 'n0':
        out[key] = checkNumber(where, key, v, { min0: true });
        break;
      case 'cur':
        out[key] = checkCurrency(where, v);
        break;
      case 'items':
        if (!Array.isArray(v)) fail(where, `items must be an array, got ${describe(v)}`);
        out[key] = v;
        break;
      default:
        out[key] = v;
    }
  }
  for (const key of required) {
    if (out[key] === undefined) fail(where, `${key} is required`);
  }
  if (money && out['value'] !== undefined && out['currency'] === undefined) {
    fail(where, 'currency is required when value is set');
  }
  return checkProperties(where, out, true);
}

function parseRetryAfter(v: string | null | undefined): number | undefined {
  if (v === null || v === undefined) return undefined;
  const s = v.trim();
  if (/^\d+(\.\d+)?$/.test(s)) return Math.ceil(parseFloat(s) * 1000);
  const t = Date.parse(s);
  return Number.isNaN(t) ? undefined : Math.max(0, t - Date.now());
}

function option(name: string, v: unknown, def: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (v === undefined) return def;
  const n = checkNumber('createClient', name, v, { integer: true });
  if (n < min || n > max) {
    fail('createClient', `${name} must be ${max === Number.MAX_SAFE_INTEGER ? `at least ${min}` : `between ${min} and ${max}`}, got ${n}`);
  }
  return n;
}

function errorInfo(body: unknown): { code?: string; message?: string } {
  if (isPlainObject(body) && isPlainObject(body['error'])) {
    const e = body['error'];
    return {
      code: typeof e['code'] === 'string' ? e['code'] : undefined,
      message: typeof e['message'] === 'string' ? e['message'] : undefined,
    };
  }
  return {};
}

/**
 * Creates a client. Events are queued, sent in batches (when a batch is full, every
 * `flushInterval` ms, and on `flush()`), retried with backoff on network errors, timeouts, 429
 * and 5xx, and never counted twice: each carries an `eventId` the service deduplicates on.
 * Throws `TypeError` for invalid options.
 */
export function createClient(options: ClientOptions): SvcClient {
  const where = 'createClient';
  if (!isPlainObject(options)) fail(where, `options must be an object, got ${describe(options)}`);
  const apiKey = checkString(where, 'apiKey', options.apiKey);
  if (!/^[\x21-\x7e]+$/.test(apiKey)) {
    fail(where, 'apiKey must be printable ASCII without spaces (a stray newline from an env file?)');
  }
  const projectId = checkString(where, 'projectId', options.projectId, 64);
  const endpoint = checkString(where, 'endpoint', options.endpoint);
  if (typeof host.URL === 'function') {
    try {
      new host.URL(endpoint, inBrowser() ? host.location!.href : undefined);
    } catch {
      fail(where, `endpoint must be a URL such as "https://analytics.example.com/analytics", got ${describe(endpoint)}`);
    }
  }
  const flushInterval = option('flushInterval', options.flushInterval, 2000, 0);
  const maxBatchSize = option('maxBatchSize', options.maxBatchSize, 100, 1, MAX_BATCH_SIZE);
  const maxQueueSize = option('maxQueueSize', options.maxQueueSize, 10_000, 1);
  const timeout = option('timeout', options.timeout, 10_000, 1);
  const maxRetries = option('maxRetries', options.maxRetries, 5, 0);
  const retryBaseDelay = option('retryBaseDelay', options.retryBaseDelay, 500, 0);
  const retryMaxDelay = option('retryMaxDelay', options.retryMaxDelay, 30_000, 0);
  if (options.fetch !== undefined && typeof options.fetch !== 'function') {
    fail(where, `fetch must be a function, got ${describe(options.fetch)}`);
  }
  if (options.fetch === undefined && typeof host.fetch !== 'function') {
    fail(where, 'no global fetch in this runtime: pass options.fetch');
  }
  const fetchFn: FetchLike =
    options.fetch ?? ((url: string, init: FetchInit) => host.fetch!(url, init) as Promise<FetchResponse>);
  if (options.onError !== undefined && typeof options.onError !== 'function') {
    fail(where, `onError must be a function, got ${describe(options.onError)}`);
  }
  const onError =
    options.onError ??
    ((e: SvcError) => {
      if (host.console && host.console.warn) host.console.warn(e.message);
    });
  const clientSessionId =
    options.sessionId === undefined
      ? undefined
      : checkString(where, 'sessionId', options.sessionId, LIMITS.sessionIdLength);
  const headers = { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' };

  const queue: Queued[] = [];
  let inflight: Queued[] = [];
  let seq = 0;
  let forceThrough = 0;
  let waiters: { through: number; resolve: () => void }[] = [];
  let draining: Promise<void> | null = null;
  let timer: unknown = null;
  let closed = false;
  let aborted = false;
  let deadline: number | undefined;
  let unloading = false;
  let wake: (() => void) | null = null;
  let interrupt: (() => void) | null = null;
  let dropPending = 0;
  const counts = { sent: 0, failed: 0, dropped: 0, retries: 0 };

  const report = (e: SvcError): void => {
    try {
      onError(e);
    } catch {
      // A throwing onError must not break the sender.
    }
  };

  const giveUp = (n: number, e: SvcError): void => {
    counts.failed += n;
    report(e);
  };

  const oldestPending = (): number => {
    let o = seq + 1;
    if (inflight.length > 0) o = Math.min(o, inflight[0]!.seq);
    if (queue.length > 0) o = Math.min(o, queue[0]!.seq);
    return o;
  };

  const settle = (): void => {
    if (waiters.length === 0) return;
    const o = oldestPending();
    waiters = waiters.filter((w) => {
      if (w.through < o) {
        w.resolve();
        return false;
      }
      return true;
    });
  };

  const exitHook = (): void => {
    if (queue.length > 0) kick(true);
  };

  const sleep = (ms: number): Promise<void> =>
    new Promise<void>((resolve) => {
      const done = (): void => {
        host.clearTimeout(handle);
        if (wake === done) wake = null;
        resolve();
      };
      const handle = host.setTimeout(done, ms);
      wake = done;
    });

  const arm = (): void => {
    if (timer === null && flushInterval > 0 && !closed && queue.length > 0) {
      timer = idleTimer(() => {
        timer = null;
        kick(true);
      }, flushInterval);
    }
  };

  const due = (): boolean =>
    !aborted && queue.length > 0 && (queue.length >= maxBatchSize || forceThrough >= queue[0]!.seq);

  function kick(force: boolean): void {
    if (force) forceThrough = seq;
    if (draining || !due()) return;
    draining = (async () => {
      try {
        while (due()) {
          const batch = take();
          inflight = batch;
          await send(batch);
          inflight = [];
          settle();
        }
      } finally {
        inflight = [];
        draining = null;
        settle();
        if (queue.length === 0) offBeforeExit(exitHook);
        else if (due()) kick(false);
        else arm();
      }
    })();
  }

  /** The oldest queued events that fit in one request. */
  function take(): Queued[] {
    let bytes = 12;
    let n = 0;
    while (n < queue.length && n < maxBatchSize) {
      const b = queue[n]!.bytes + 1;
      if (n > 0 && bytes + b > MAX_BODY_BYTES) break;
      bytes += b;
      n++;
    }
    return queue.splice(0, n);
  }

  async function attempt(body: string, keepalive: boolean): Promise<Outcome> {
    const ctrl = host.AbortController ? new host.AbortController() : undefined;
    const limit = deadline === undefined ? timeout : Math.max(1, Math.min(timeout, deadline - Date.now()));
    let handle: unknown;
    const stop = new Promise<'timeout' | 'aborted'>((resolve) => {
      handle = host.setTimeout(() => resolve('timeout'), limit);
      interrupt = () => resolve('aborted');
    });
    const init: FetchInit = { method: 'POST', headers: { ...headers }, body };
    if (ctrl) init.signal = ctrl.signal;
    if (keepalive) init.keepalive = true;
    const request = (async () => {
      const res = await fetchFn(endpoint, init);
      const text = await res.text();
      return { res, text };
    })();
    try {
      const r = await Promise.race([request, stop]);
      if (r === 'timeout' || r === 'aborted') {
        if (ctrl) ctrl.abort();
        request.catch(() => undefined);
        return {
          status: 0,
          error:
            r === 'timeout'
              ? new SvcError('timeout', `svc: request timed out after ${limit} ms`)
              : new SvcError('shutdown_timeout', 'svc: request abandoned at shutdown'),
        };
      }
      let parsed: unknown;
      try {
        parsed = r.text ? JSON.parse(r.text) : undefined;
      } catch {
        parsed = undefined;
      }
      const h = r.res.headers;
      const retryAfter = h && typeof h.get === 'function' ? parseRetryAfter(h.get('retry-after')) : undefined;
      return { status: r.res.status, body: parsed, retryAfter };
    } catch (e) {
      const msg = e instanceof Error ? e.message : String(e);
      return { status: 0, error: new SvcError('network_error', `svc: request failed: ${msg}`, { cause: e }) };
    } finally {
      host.clearTimeout(handle);
      interrupt = null;
    }
  }

  /** The `rejected` list of an answer, by event. */
  function rejectedOf(batch: Queued[], body: unknown): RejectedEvent[] {
    const rejected: RejectedEvent[] = [];
    const list = isPlainObject(body) && Array.isArray(body['rejected']) ? (body['rejected'] as unknown[]) : [];
    for (const r of list) {
      if (!isPlainObject(r) || typeof r['index'] !== 'number') continue;
      const q = batch[r['index']];
      if (!q) continue;
      const info = errorInfo(r);
      rejected.push({
        eventId: q.id,
        event: q.name,
        error: { code: info.code ?? 'invalid_request', message: info.message ?? '' },
      });
    }
    return rejected;
  }

  function accepted(batch: Queued[], body: unknown): void {
    const rejected = rejectedOf(batch, body);
    counts.sent += batch.length - rejected.length;
    if (rejected.length > 0) {
      const first = rejected[0]!;
      giveUp(
        rejected.length,
        new SvcError(
          'events_rejected',
          `svc: the service refused ${rejected.length} of ${batch.length} event(s); first: "${first.event}" ` +
            `(${first.error.code}: ${first.error.message})`,
          { status: 200, count: rejected.length, rejected },
        ),
      );
    }
  }

  /** Sends one batch until it is accepted or given up. Never throws. */
  async function send(batch: Queued[]): Promise<void> {
    const n = batch.length;
    let size = 12;
    for (const q of batch) size += q.bytes + 1;
    const body = `{"events":[${batch.map((q) => q.json).join(',')}]}`;
    for (let tries = 0; ; tries++) {
      if (aborted) {
        giveUp(n, new SvcError('shutdown_timeout', `svc: ${n} event(s) not sent before shutdown timed out`, { count: n }));
        return;
      }
      const r = await attempt(body, unloading && size <= KEEPALIVE_MAX_BYTES && tries === 0);
      if (r.status >= 200 && r.status < 300) {
        accepted(batch, r.body);
        return;
      }
      if (r.status === 413 && n > 1) {
        const half = n >> 1;
        await send(batch.slice(0, half));
        await send(batch.slice(half));
        return;
      }
      let err = r.error;
      if (!err) {
        const info = errorInfo(r.body);
        const code = info.code ?? `http_${r.status}`;
        // A batch none of whose events was valid is answered with the first one's error, and
        // lists every event's error in `rejected`.
        const rejected = rejectedOf(batch, r.body);
        err = new SvcError(code, `svc: ${n} event(s) not sent: HTTP ${r.status} ${code}${info.message ? `: ${info.message}` : ''}`, {
          status: r.status,
          count: n,
          rejected: rejected.length > 0 ? rejected : undefined,
        });
      }
      const retryable = r.status === 0 || r.status === 429 || r.status >= 500;
      if (!retryable || aborted) {
        if (aborted && err.code !== 'shutdown_timeout') {
          err = new SvcError('shutdown_timeout', `svc: ${n} event(s) not sent before shutdown timed out`, { count: n, cause: err });
        }
        giveUp(
          n,
          err.count === n
            ? err
            : new SvcError(err.code, err.message, { status: err.status, count: n, rejected: err.rejected, cause: err.cause }),
        );
        return;
      }
      if (tries >= maxRetries) {
        giveUp(
          n,
          new SvcError('retries_exhausted', `svc: gave up on ${n} event(s) after ${tries + 1} attempts: ${err.message}`, {
            status: r.status || undefined,
            count: n,
            cause: err,
          }),
        );
        return;
      }
      let delay: number;
      if (r.retryAfter !== undefined) {
        if (r.retryAfter > retryMaxDelay) {
          giveUp(
            n,
            new SvcError(err.code, `${err.message} (Retry-After ${Math.ceil(r.retryAfter / 1000)} s is longer than retryMaxDelay; not retried)`, {
              status: r.status,
              count: n,
            }),
          );
          return;
        }
        delay = r.retryAfter;
      } else {
        delay = Math.random() * Math.min(retryMaxDelay, retryBaseDelay * 2 ** tries);
      }
      if (deadline !== undefined && Date.now() + delay >= deadline) {
        giveUp(n, new SvcError('shutdown_timeout', `svc: ${n} event(s) not sent before shutdown timed out: ${err.message}`, { count: n, cause: err }));
        return;
      }
      counts.retries++;
      await sleep(delay);
    }
  }

  function enqueue(where: string, name: string, properties: JsonObject | undefined, o: unknown, pageUrl?: string, pageReferrer?: string): void {
    if (o !== undefined && o !== null && !isPlainObject(o)) fail(where, `options must be a plain object, got ${describe(o)}`);
    const opts = (o || {}) as EventOptions;
    let url = pageUrl;
    if (url === undefined) {
      if (opts.url !== undefined) url = checkUrl(where, opts.url);
      else url = inBrowser() && host.location!.href ? truncate(host.location!.href, LIMITS.urlLength) : '/';
    }
    let referrer = pageReferrer;
    // Context fields often come from request headers: undefined, null and "" mean "not known".
    const given = (v: unknown): boolean => v !== undefined && v !== null && v !== '';
    if (given(opts.referrer)) {
      referrer = truncate(checkString(where, 'referrer', opts.referrer), LIMITS.urlLength);
    }
    const sessionId =
      given(opts.sessionId) ? checkString(where, 'sessionId', opts.sessionId, LIMITS.sessionIdLength) : clientSessionId;
    const userAgent =
      given(opts.userAgent)
        ? truncate(checkString(where, 'userAgent', opts.userAgent), LIMITS.userAgentLength)
        : undefined;
    const ip = given(opts.ip) ? checkIp(where, opts.ip) : undefined;
    const ts = opts.timestamp !== undefined ? checkTimestamp(where, opts.timestamp) : Date.now();
    const eventId = opts.eventId !== undefined ? checkString(where, 'eventId', opts.eventId, LIMITS.eventIdLength) : uuid();

    // Field order is part of the wire format shared with the Python client.
    const ev: JsonObject = { event: name, url };
    if (sessionId !== undefined) ev['sessionId'] = sessionId;
    ev['projectId'] = projectId;
    if (properties !== undefined) ev['properties'] = properties;
    if (referrer) ev['referrer'] = referrer;
    ev['ts'] = ts;
    ev['eventId'] = eventId;
    if (userAgent !== undefined) ev['userAgent'] = userAgent;
    if (ip !== undefined) ev['ip'] = ip;
    const json = JSON.stringify(ev);
    const bytes = utf8Length(json);
    if (bytes > MAX_BODY_BYTES - 12) fail(where, `the event is ${bytes} bytes once encoded; the limit is ${MAX_BODY_BYTES - 12}`);

    if (closed) {
      giveUp(1, new SvcError('client_closed', `svc: "${name}" not sent: the client was shut down`, { count: 1 }));
      return;
    }
    queue.push({ seq: ++seq, id: eventId, name, json, bytes });
    onBeforeExit(exitHook);
    if (queue.length > maxQueueSize) {
      const over = queue.length - maxQueueSize;
      queue.splice(0, over);
      counts.dropped += over;
      if (dropPending === 0) {
        void Promise.resolve().then(() => {
          const k = dropPending;
          dropPending = 0;
          report(
            new SvcError(
              'queue_overflow',
              `svc: queue full (maxQueueSize ${maxQueueSize}): dropped the ${k} oldest event(s), ${counts.dropped} in all`,
              { count: k },
            ),
          );
        });
      }
      dropPending += over;
      settle();
    }
    if (queue.length >= maxBatchSize) kick(false);
    else arm();
  }

  function flush(o?: FlushOptions): Promise<void> {
    const limit = o && o.timeout !== undefined ? checkNumber('flush', 'timeout', o.timeout, { min0: true }) : undefined;
    const through = seq;
    if (oldestPending() > through) return Promise.resolve();
    const done = new Promise<void>((resolve) => waiters.push({ through, resolve }));
    kick(true);
    if (limit === undefined) return done;
    let handle: unknown;
    return Promise.race([done, new Promise<void>((resolve) => (handle = host.setTimeout(resolve, limit)))]).then(() =>
      host.clearTimeout(handle),
    );
  }

  async function shutdown(o?: FlushOptions): Promise<void> {
    const limit =
      o && o.timeout !== undefined ? checkNumber('shutdown', 'timeout', o.timeout, { min0: true }) : DEFAULT_SHUTDOWN_TIMEOUT;
    if (!closed) {
      closed = true;
      if (timer !== null) host.clearTimeout(timer);
      timer = null;
      detachPageListeners();
    }
    const end = Date.now() + limit;
    deadline = deadline === undefined ? end : Math.min(deadline, end);
    await flush({ timeout: limit });
    if (queue.length > 0 || inflight.length > 0) {
      aborted = true;
      if (interrupt) interrupt();
      if (wake) wake();
      if (draining) await draining;
      const n = queue.length;
      if (n > 0) {
        queue.length = 0;
        giveUp(n, new SvcError('shutdown_timeout', `svc: ${n} event(s) not sent before shutdown timed out`, { count: n }));
      }
    } else if (draining) {
      await draining;
    }
    settle();
    offBeforeExit(exitHook);
  }

  // In a web page: send what is queued when the page is hidden or unloaded, with keepalive.
  const onHide = (): void => {
    const d = host.document;
    unloading = !d || d.visibilityState === 'hidden';
    if (unloading) kick(true);
  };
  const onPageHide = (): void => {
    unloading = true;
    kick(true);
  };
  const browser = inBrowser();
  if (browser) {
    if (host.document!.addEventListener) host.document!.addEventListener('visibilitychange', onHide);
    if (host.addEventListener) host.addEventListener('pagehide', onPageHide);
  }
  function detachPageListeners(): void {
    if (!browser) return;
    if (host.document!.removeEventListener) host.document!.removeEventListener('visibilitychange', onHide);
    if (host.removeEventListener) host.removeEventListener('pagehide', onPageHide);
  }

  // ----- the public API -----

  const client = {
    track(name: string, properties?: unknown, opts?: EventOptions): void {
      const n = checkName('track', name);
      enqueue('track', n, checkProperties('track', properties), opts);
    },

    pageView(url?: string, opts?: EventOptions): void {
      const at = 'pageView';
      let u: string;
      if (url !== undefined && url !== null) u = checkUrl(at, url);
      else if (browser && host.location!.href) u = truncate(host.location!.href, LIMITS.urlLength);
      else return fail(at, 'url is required outside a browser, e.g. pageView("/pricing")');
      const ref = browser && host.document!.referrer ? truncate(host.document!.referrer, LIMITS.urlLength) : undefined;
      if (opts !== undefined && opts !== null && isPlainObject(opts) && 'url' in opts) {
        fail(at, 'pass the URL as the first argument, not in options');
      }
      enqueue(at, 'page_view', undefined, opts, u, ref);
    },

    purchase(transactionId: string, value: number, currency: string, items: unknown, opts?: PurchaseOptions): void {
      const at = 'purchase';
      const props: JsonObject = {
        transaction_id: checkString(at, 'transactionId', transactionId),
        value: checkNumber(at, 'value', value, { min0: true }),
        currency: checkCurrency(at, currency),
      };
      const checkedItems = checkItems(at, items, true);
      if (opts !== undefined && opts !== null) {
        if (!isPlainObject(opts)) fail(at, `options must be a plain object, got ${describe(opts)}`);
        if (opts.coupon !== undefined) props['coupon'] = checkString(at, 'coupon', opts.coupon);
        if (opts.shipping !== undefined) props['shipping'] = checkNumber(at, 'shipping', opts.shipping, { min0: true });
        if (opts.tax !== undefined) props['tax'] = checkNumber(at, 'tax', opts.tax, { min0: true });
        if (opts.affiliation !== undefined) props['affiliation'] = checkString(at, 'affiliation', opts.affiliation);
      }
      props['items'] = checkedItems;
      enqueue(at, 'purchase', props, opts);
    },

    captureException(error: unknown, opts?: ExceptionOptions): void {
      const at = 'captureException';
      if (opts !== undefined && opts !== null && !isPlainObject(opts)) {
        fail(at, `options must be a plain object, got ${describe(opts)}`);
      }
      const fatal = opts && opts.fatal !== undefined ? opts.fatal : false;
      if (typeof fatal !== 'boolean') fail(at, `fatal must be a boolean, got ${describe(fatal)}`);
      let description: string;
      let stack: string | undefined;
      if (typeof error === 'object' && error !== null && typeof (error as { message?: unknown }).message === 'string') {
        const e = error as { name?: unknown; message: string; stack?: unknown };
        const name = typeof e.name === 'string' && e.name ? e.name : 'Error';
        description = e.message ? `${name}: ${e.message}` : name;
        if (typeof e.stack === 'string' && e.stack) stack = e.stack;
      } else if (typeof error === 'string') {
        description = error || 'Error';
      } else {
        let s: string | undefined;
        try {
          s = JSON.stringify(error);
        } catch {
          s = undefined;
        }
        description = s === undefined ? String(error) : s;
      }
      const props: JsonObject = { description: truncate(description, LIMITS.descriptionLength), fatal };
      if (stack !== undefined) props['stack'] = truncate(stack, LIMITS.stackLength);
      enqueue(at, 'exception', props, opts);
    },

    tutorialBegin(opts?: EventOptions): void {
      enqueue('tutorialBegin', 'tutorial_begin', undefined, opts);
    },

    tutorialComplete(opts?: EventOptions): void {
      enqueue('tutorialComplete', 'tutorial_complete', undefined, opts);
    },

    flush,
    shutdown,

    stats(): ClientStats {
      return {
        queued: queue.length,
        inFlight: inflight.length,
        sent: counts.sent,
        failed: counts.failed,
        dropped: counts.dropped,
        retries: counts.retries,
      };
    },
  } as Record<string, unknown>;

  for (const method of Object.keys(GA4_HELPERS)) {
    const [event, required, money] = GA4_HELPERS[method]!;
    client[method] = (params?: unknown, opts?: EventOptions): void => {
      enqueue(method, event, ga4Params(method, params, required, money), opts);
    };
  }

  return client as unknown as SvcClient;
}
