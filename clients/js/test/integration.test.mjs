// Against the real svc server, started here as a subprocess:
//   svcm serve --host 127.0.0.1 --port <free> --data-dir <tmp>
// Skipped, with the reason, when svcm is missing or does not answer GET /health within 15 s.
// SVCM=/path/to/svcm overrides where svcm is looked for; SVC_INTEGRATION=require turns a skip
// into a failure (for CI once the server is part of the build).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createClient } from '../dist/esm/index.js';

const here = dirname(fileURLToPath(import.meta.url));
const SVCM = process.env.SVCM || resolve(here, '../../../.venv/bin/svcm');
const START_TIMEOUT_MS = 15_000;
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const ADMIN = 'svc_admin_' + [...randomBytes(32)].map((b) => BASE62[b % 62]).join('');
const BROWSER_UA =
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36';

let skip = '';
const REQUIRE = process.env.SVC_INTEGRATION === 'require';
const servers = [];
let main; // the server most tests share

/** Skips the test (or fails it, with SVC_INTEGRATION=require) when there is no server. */
function noServer(t, why = skip) {
  if (!why) return false;
  if (REQUIRE) assert.fail(why);
  t.skip(why);
  return true;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function freePort() {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => ok(port));
    });
  });
}

/**
 * Starts `svcm serve` on a free port with a fresh data directory and `env` added. Resolves to
 * the server, or to `{ skip: <why> }` when svcm is missing or not answering within 15 s.
 */
async function startServer(env = {}) {
  if (!existsSync(SVCM)) {
    return { skip: `the svc server is not installed (no ${SVCM}); set SVCM or install the server to run these` };
  }
  const port = await freePort();
  const srv = { base: `http://127.0.0.1:${port}`, dataDir: mkdtempSync(join(tmpdir(), 'svc-jsclient-')), log: '' };
  srv.proc = spawn(SVCM, ['serve', '--host', '127.0.0.1', '--port', String(port), '--data-dir', srv.dataDir], {
    env: { ...process.env, SVC_ADMIN_TOKEN: ADMIN, SVC_SPOOL_FLUSH_INTERVAL_MS: '50', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  servers.push(srv);
  const keep = (chunk) => {
    srv.log = (srv.log + chunk).slice(-4000);
  };
  srv.proc.stdout.on('data', keep);
  srv.proc.stderr.on('data', keep);
  let exited = null;
  srv.proc.once('exit', (code, signal) => (exited = signal ?? code));
  const end = Date.now() + START_TIMEOUT_MS;
  while (Date.now() < end && exited === null) {
    try {
      const r = await fetch(`${srv.base}/health`);
      await r.text();
      if (r.status === 200) return srv;
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  return {
    skip:
      exited !== null
        ? `svcm serve exited (${exited}) before answering GET /health; its output:\n${srv.log}`
        : `svcm serve did not answer GET /health with 200 within ${START_TIMEOUT_MS / 1000} s; its output:\n${srv.log}`,
  };
}

async function stopServer(srv) {
  if (srv.proc.exitCode === null && srv.proc.signalCode === null) {
    const gone = new Promise((r) => srv.proc.once('exit', r));
    srv.proc.kill('SIGTERM');
    const t = setTimeout(() => srv.proc.kill('SIGKILL'), 5000);
    await gone;
    clearTimeout(t);
  }
  rmSync(srv.dataDir, { recursive: true, force: true });
}

async function http(srv, method, path, { token, body } = {}) {
  const headers = {};
  if (token) headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(srv.base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, json, text, headers: res.headers };
}

/** Creates a project; returns its id and keys. */
async function project(name, srv = main) {
  const r = await http(srv, 'POST', '/projects', { token: ADMIN, body: { name } });
  assert.equal(r.status, 201, `POST /projects: ${r.status} ${r.text}`);
  const id = r.json.project?.id ?? r.json.id;
  assert.equal(id, `svc_proj_${name}`);
  assert.match(r.json.keys.public, /^svc_live_/);
  assert.match(r.json.keys.secret, /^svc_live_/);
  return { id, publicKey: r.json.keys.public, secretKey: r.json.keys.secret, srv };
}

/** Waits until the ingestion pipeline has stored everything it acknowledged. */
async function drained(srv) {
  const end = Date.now() + 20_000;
  let last;
  while (Date.now() < end) {
    last = await http(srv, 'GET', '/health');
    if (last.json?.pipeline?.backlogEvents === 0) return;
    await sleep(25);
  }
  assert.fail(`the pipeline backlog did not drain: ${last && last.text}`);
}

function dayUTC(offsetDays = 0) {
  return new Date(Date.now() + offsetDays * 86_400_000).toISOString().slice(0, 10);
}

async function metrics(p) {
  await drained(p.srv);
  // From yesterday to today (UTC, the project's default zone): safe around midnight.
  const r = await http(p.srv, 'GET', `/metrics?from=${dayUTC(-1)}`, { token: p.secretKey });
  assert.equal(r.status, 200, `GET /metrics: ${r.status} ${r.text}`);
  assert.equal(typeof r.json.pageviews, 'number');
  assert.equal(typeof r.json.sessions, 'number');
  return r.json;
}

/** A client of the real server; `errors` collects what onError saw; `requests` counts fetches. */
function client(p, opts = {}) {
  const errors = [];
  const counter = { requests: 0 };
  const inner = opts.fetch ?? ((u, i) => fetch(u, i));
  const c = createClient({
    apiKey: p.secretKey,
    projectId: p.id,
    endpoint: `${p.srv.base}/analytics`,
    flushInterval: 0,
    retryBaseDelay: 10,
    onError: (e) => errors.push(e),
    ...opts,
    fetch: (u, i) => {
      counter.requests++;
      return inner(u, i);
    },
  });
  return { c, errors, counter };
}

function explain(errors) {
  return errors.map((e) => `${e.code}: ${e.message}`).join('\n');
}

before(async () => {
  const srv = await startServer();
  if (srv.skip) skip = srv.skip;
  else main = srv;
});

after(async () => {
  await Promise.all(servers.map(stopServer));
});

describe('against the real svc server', () => {
  test('events sent by the client are stored and counted once', async (t) => {
    if (noServer(t)) return;
    const p = await project('jsclient');
    const { c, errors, counter } = client(p);
    const ua = { userAgent: BROWSER_UA, ip: '203.0.113.7' };
    c.pageView('https://acme.example/', { ...ua, sessionId: 'js-s1', referrer: 'https://www.google.com/' });
    c.pageView('https://acme.example/pricing', { ...ua, sessionId: 'js-s1' });
    c.track('signup', { plan: 'pro' }, { ...ua, sessionId: 'js-s1', url: 'https://acme.example/signup' });
    c.purchase('T1', 30, 'EUR', [{ item_id: 'sku1', price: 10, quantity: 3 }], { ...ua, sessionId: 'js-s1', url: 'https://acme.example/checkout' });
    c.pageView('https://acme.example/', { ...ua, sessionId: 'js-s2' });
    c.captureException(new Error('boom'), { ...ua, fatal: true, sessionId: 'js-s2', url: 'https://acme.example/' });
    c.addToCart({ currency: 'EUR', value: 10, items: [{ item_id: 'sku1', price: 10, quantity: 1 }] }, { ...ua, sessionId: 'js-s2', url: 'https://acme.example/p/sku1' });
    await c.flush();
    assert.equal(errors.length, 0, explain(errors));
    assert.deepEqual(c.stats(), { queued: 0, inFlight: 0, sent: 7, failed: 0, dropped: 0, retries: 0 });
    assert.equal(counter.requests, 1, 'one batch');

    const m = await metrics(p);
    assert.equal(m.pageviews, 3, JSON.stringify(m));
    assert.equal(m.sessions, 2, JSON.stringify(m));
    if ('events' in m) assert.equal(m.events, 7, JSON.stringify(m));
    assert.equal(m.bounceRate, '0.0%', JSON.stringify(m));
    await c.shutdown();
  });

  test('resending the same eventIds, and retrying after a lost response, never double-counts', async (t) => {
    if (noServer(t)) return;
    const p = await project('jsclient-dedup');
    const ua = { userAgent: BROWSER_UA };
    const send = (c) => {
      c.pageView('https://acme.example/a', { ...ua, sessionId: 'd1', eventId: 'dedup-pv-1' });
      c.pageView('https://acme.example/b', { ...ua, sessionId: 'd1', eventId: 'dedup-pv-2' });
      c.track('signup', { plan: 'pro' }, { ...ua, sessionId: 'd1', eventId: 'dedup-signup-1' });
    };
    const first = client(p);
    send(first.c);
    await first.c.flush();
    assert.equal(first.errors.length, 0, explain(first.errors));
    const before = await metrics(p);
    assert.equal(before.pageviews, 2, JSON.stringify(before));

    // The same events again, as an application-level retry would send them.
    const again = client(p);
    send(again.c);
    await again.c.flush();
    assert.equal(again.errors.length, 0, explain(again.errors));

    // A request that reaches the server but whose answer is lost: the client retries it.
    let lost = 0;
    const lossy = client(p, {
      fetch: async (u, i) => {
        const res = await fetch(u, i);
        const text = await res.text();
        if (lost++ === 0) throw new TypeError('fetch failed: connection reset (simulated)');
        return new Response(text, { status: res.status, headers: res.headers });
      },
    });
    lossy.c.pageView('https://acme.example/c', { ...ua, sessionId: 'd1' });
    await lossy.c.flush();
    assert.equal(lossy.counter.requests, 2, 'the batch was sent twice');
    assert.equal(lossy.c.stats().retries, 1);
    assert.equal(lossy.errors.length, 0, explain(lossy.errors));

    const afterAll = await metrics(p);
    assert.equal(afterAll.pageviews, 3, `only the one new page view counts: ${JSON.stringify(afterAll)}`);
    if ('events' in afterAll) assert.equal(afterAll.events, 4, JSON.stringify(afterAll));
    assert.equal(afterAll.sessions, 1, JSON.stringify(afterAll));
  });

  test('a batch of 1,000 events goes in one request', async (t) => {
    if (noServer(t)) return;
    const p = await project('jsclient-bulk');
    const { c, errors, counter } = client(p, { maxBatchSize: 1000 });
    for (let i = 0; i < 1000; i++) c.pageView(`https://acme.example/p/${i}`, { userAgent: BROWSER_UA, sessionId: `bulk-${i % 10}` });
    await c.flush();
    assert.equal(errors.length, 0, explain(errors));
    assert.equal(counter.requests, 1);
    assert.equal(c.stats().sent, 1000);
    const m = await metrics(p);
    assert.equal(m.pageviews, 1000, JSON.stringify(m));
    assert.equal(m.sessions, 10, JSON.stringify(m));
  });

  test('events sent from a server without the end user\'s user agent are stored', async (t) => {
    if (noServer(t)) return;
    const p = await project('jsclient-serverside');
    const { c, errors } = client(p);
    c.track('invoice_paid', { amount: 99 }, { sessionId: 'srv-1' });
    c.purchase('T9', 99, 'USD', [{ item_id: 'plan-pro', price: 99, quantity: 1 }], { sessionId: 'srv-1' });
    await c.flush();
    assert.equal(errors.length, 0, explain(errors));
    const m = await metrics(p);
    assert.equal(m.sessions, 1, `server-side events (request User-Agent of the runtime's fetch) were not counted: ${JSON.stringify(m)}`);
    if ('events' in m) assert.equal(m.events, 2, JSON.stringify(m));
  });

  test('the public key ingests; an event refused inside a batch is reported, the rest stored', async (t) => {
    if (noServer(t)) return;
    const p = await project('jsclient-public');
    // As a browser would send it: the public key, the browser's own User-Agent header (a public
    // key's events carry no userAgent field: only secret keys may speak for an end user).
    const { c, errors } = client(p, {
      apiKey: p.publicKey,
      fetch: (u, i) => fetch(u, { ...i, headers: { ...i.headers, 'User-Agent': BROWSER_UA } }),
    });
    c.pageView('https://acme.example/', { sessionId: 'pub-1' });
    c.pageView('https://acme.example/old', { sessionId: 'pub-1', timestamp: Date.now() - 8 * 86_400_000 });
    await c.flush();
    assert.equal(errors.length, 1, explain(errors));
    assert.equal(errors[0].code, 'events_rejected');
    assert.equal(errors[0].rejected.length, 1);
    assert.equal(errors[0].rejected[0].event, 'page_view');
    assert.equal(errors[0].rejected[0].error.code, 'invalid_request');
    assert.match(errors[0].rejected[0].error.message, /ts/);
    assert.deepEqual(c.stats(), { queued: 0, inFlight: 0, sent: 1, failed: 1, dropped: 0, retries: 0 });
    const m = await metrics(p);
    assert.equal(m.pageviews, 1, JSON.stringify(m));
    // The public key cannot read.
    const r = await http(p.srv, 'GET', `/metrics?from=${dayUTC(-1)}`, { token: p.publicKey });
    assert.equal(r.status, 403);
  });

  test('a batch none of whose events is valid is refused, each event\'s error reported', async (t) => {
    if (noServer(t)) return;
    const p = await project('jsclient-allbad');
    const { c, errors, counter } = client(p);
    const old = Date.now() - 8 * 86_400_000;
    c.track('a', {}, { timestamp: old });
    c.track('b', {}, { timestamp: old });
    await c.flush();
    assert.equal(counter.requests, 1, 'not retried');
    assert.equal(errors.length, 1, explain(errors));
    assert.equal(errors[0].status, 400);
    assert.equal(errors[0].code, 'invalid_request');
    assert.deepEqual(errors[0].rejected?.map((r) => r.event), ['a', 'b']);
    assert.equal(c.stats().failed, 2);
  });

  test('an unknown key (401) and another project\'s id (403) are reported, not retried', async (t) => {
    if (noServer(t)) return;
    const p = await project('jsclient-auth');
    const other = await project('jsclient-other');

    const bad = client(p, { apiKey: 'svc_live_' + 'x'.repeat(32) });
    bad.c.track('e');
    await bad.c.flush();
    assert.equal(bad.counter.requests, 1);
    assert.equal(bad.errors.length, 1);
    assert.equal(bad.errors[0].status, 401);
    assert.equal(bad.errors[0].code, 'invalid_api_key');
    assert.equal(bad.c.stats().failed, 1);

    const wrong = client(p, { apiKey: other.secretKey });
    wrong.c.track('e');
    await wrong.c.flush();
    assert.equal(wrong.counter.requests, 1);
    assert.equal(wrong.errors.length, 1, explain(wrong.errors));
    assert.equal(wrong.errors[0].status, 403);
    assert.equal(wrong.errors[0].code, 'forbidden');
  });

  test('past the monthly quota: the refused events are reported, a 429 is not waited out', async (t) => {
    if (noServer(t)) return;
    const srv = await startServer({ SVC_MONTHLY_QUOTA: '3' });
    if (noServer(t, srv.skip)) return;
    const p = await project('jsclient-quota', srv);
    const ua = { userAgent: BROWSER_UA, sessionId: 'q1' };

    // Five events, room for three: the batch is taken in part.
    const { c, errors, counter } = client(p);
    for (let i = 0; i < 5; i++) c.pageView(`https://acme.example/q/${i}`, ua);
    await c.flush();
    assert.equal(counter.requests, 1);
    assert.equal(errors.length, 1, explain(errors));
    assert.equal(errors[0].code, 'events_rejected');
    assert.deepEqual(
      errors[0].rejected.map((r) => r.error.code),
      ['quota_exceeded', 'quota_exceeded'],
    );
    assert.deepEqual(c.stats(), { queued: 0, inFlight: 0, sent: 3, failed: 2, dropped: 0, retries: 0 });

    // Nothing left: 429 with a Retry-After until next month, far past retryMaxDelay.
    const later = client(p);
    later.c.pageView('https://acme.example/q/late', ua);
    const t0 = Date.now();
    await later.c.flush();
    assert.ok(Date.now() - t0 < 5000);
    assert.equal(later.counter.requests, 1, 'not retried');
    assert.equal(later.errors.length, 1, explain(later.errors));
    assert.equal(later.errors[0].status, 429);
    assert.equal(later.errors[0].code, 'quota_exceeded');
    assert.match(later.errors[0].message, /not retried/);
    assert.equal(later.c.stats().failed, 1);

    const m = await metrics(p);
    assert.equal(m.pageviews, 3, JSON.stringify(m));
  });
});
