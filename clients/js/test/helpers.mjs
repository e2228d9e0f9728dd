// Shared by the unit tests: a scripted fake fetch and small utilities.
import { createClient } from '../dist/esm/index.js';

export const ENDPOINT = 'http://svc.test/analytics';

/** A Response like the service's success answer. */
export function ok(accepted, extra = {}) {
  return json(200, { ok: true, ts: Date.now(), accepted, rejected: [], ...extra });
}

/** A JSON Response with a status and headers. */
export function json(status, body, headers = {}) {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json', ...headers },
  });
}

/** The service's error answer. */
export function error(status, code, message = code, headers = {}) {
  return json(status, { ok: false, error: { code, message } }, headers);
}

/**
 * A fake fetch. `responder(call, index)` returns a Response, an Error to throw, or a promise of
 * either; by default every batch is accepted. Calls are recorded in `fetch.calls`.
 */
export function fakeFetch(responder = (call) => ok(call.events.length)) {
  const calls = [];
  const fn = async (url, init) => {
    const call = { url, init, body: init.body, events: JSON.parse(init.body).events, at: Date.now() };
    calls.push(call);
    const r = await responder(call, calls.length - 1);
    if (r instanceof Error) throw r;
    return r;
  };
  fn.calls = calls;
  return fn;
}

/** A client on a fake fetch; errors reported to onError are collected in `errors`. */
export function makeClient(opts = {}) {
  const errors = [];
  const fetch = opts.fetch ?? fakeFetch();
  const client = createClient({
    apiKey: 'svc_live_testkey',
    projectId: 'svc_proj_test',
    endpoint: ENDPOINT,
    flushInterval: 0,
    retryBaseDelay: 1,
    onError: (e) => errors.push(e),
    ...opts,
    fetch,
  });
  return { client, fetch, errors };
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Waits until `cond()` is true, polling, or fails after `ms`. */
export async function until(cond, ms = 2000, what = 'condition') {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

export const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
