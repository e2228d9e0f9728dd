// Batching, flushing, retries, backoff, Retry-After, the queue bound and shutdown, on a fake fetch.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, test } from 'node:test';
import { ENDPOINT, UUID_V4, error, fakeFetch, json, makeClient, ok, sleep, until } from './helpers.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const realRandom = Math.random;
afterEach(() => {
  Math.random = realRandom;
});

describe('batching', () => {
  test('a full batch is sent at once, the rest on flush()', async () => {
    const { client, fetch } = makeClient({ maxBatchSize: 3 });
    for (let i = 0; i < 7; i++) client.track('e', { i });
    await until(() => fetch.calls.length === 2, 1000, 'two full batches');
    assert.deepEqual(
      fetch.calls.map((c) => c.events.length),
      [3, 3],
    );
    assert.equal(client.stats().queued, 1);
    await client.flush();
    assert.deepEqual(
      fetch.calls.map((c) => c.events.length),
      [3, 3, 1],
    );
    assert.deepEqual(
      fetch.calls.flatMap((c) => c.events.map((e) => e.properties.i)),
      [0, 1, 2, 3, 4, 5, 6],
      'events keep their order',
    );
    assert.deepEqual(client.stats(), { queued: 0, inFlight: 0, sent: 7, failed: 0, dropped: 0, retries: 0 });
    await client.shutdown();
  });

  test('a partial batch is sent after flushInterval', async () => {
    const { client, fetch } = makeClient({ flushInterval: 40 });
    client.track('a');
    client.track('b');
    await sleep(10);
    assert.equal(fetch.calls.length, 0, 'nothing before the interval');
    await until(() => fetch.calls.length === 1, 2000, 'the timed flush');
    assert.deepEqual(
      fetch.calls[0].events.map((e) => e.event),
      ['a', 'b'],
    );
    client.track('c');
    await until(() => fetch.calls.length === 2, 2000, 'a second timed flush');
    await client.shutdown();
  });

  test('the request: POST, bearer key, JSON, {"events": [...]}', async () => {
    const { client, fetch } = makeClient();
    client.track('signup', { plan: 'pro' });
    await client.flush();
    const [call] = fetch.calls;
    assert.equal(call.url, ENDPOINT);
    assert.equal(call.init.method, 'POST');
    assert.deepEqual(call.init.headers, {
      Authorization: 'Bearer svc_live_testkey',
      'Content-Type': 'application/json',
    });
    assert.ok(call.body.startsWith('{"events":[{'));
    assert.equal(call.init.keepalive, undefined, 'keepalive only while a page unloads');
    const [ev] = call.events;
    assert.equal(ev.projectId, 'svc_proj_test');
    assert.match(ev.eventId, UUID_V4);
    assert.ok(Number.isInteger(ev.ts) && Math.abs(ev.ts - Date.now()) < 5000);
    await client.shutdown();
  });

  test('every event gets its own eventId', async () => {
    const { client, fetch } = makeClient();
    for (let i = 0; i < 500; i++) client.track('e');
    await client.flush();
    const ids = fetch.calls.flatMap((c) => c.events.map((e) => e.eventId));
    assert.equal(ids.length, 500);
    assert.equal(new Set(ids).size, 500);
    await client.shutdown();
  });

  test('flush() with nothing queued resolves at once; flush() waits for what is in flight', async () => {
    let release;
    const gate = new Promise((r) => (release = r));
    const { client, fetch } = makeClient({
      fetch: fakeFetch(async (call) => {
        await gate;
        return ok(call.events.length);
      }),
    });
    await client.flush();
    client.track('a');
    let done = false;
    const p = client.flush().then(() => (done = true));
    await until(() => fetch.calls.length === 1, 1000, 'the request');
    assert.equal(client.stats().inFlight, 1);
    await sleep(20);
    assert.equal(done, false);
    release();
    await p;
    assert.equal(client.stats().sent, 1);
    await client.shutdown();
  });

  test('flush({timeout}) resolves at the timeout and keeps the events', async () => {
    const { client } = makeClient({ fetch: fakeFetch(() => new Promise(() => {})), timeout: 60_000 });
    client.track('a');
    const t0 = Date.now();
    await client.flush({ timeout: 50 });
    assert.ok(Date.now() - t0 < 1000);
    assert.equal(client.stats().inFlight, 1);
    await client.shutdown({ timeout: 10 });
  });

  test('batches stay under 1 MB of body', async () => {
    const { client, fetch } = makeClient({ maxBatchSize: 1000 });
    const big = 'x'.repeat(2000);
    const props = {};
    for (let k = 0; k < 40; k++) props[`k${k}`] = big; // ~80 KB an event
    for (let i = 0; i < 30; i++) client.track('big', props);
    await client.flush();
    assert.ok(fetch.calls.length >= 3);
    for (const c of fetch.calls) assert.ok(Buffer.byteLength(c.body) <= 1_000_000, `body of ${c.body.length}`);
    assert.equal(client.stats().sent, 30);
    await client.shutdown();
  });

  test('the service answers 413: the batch is split and sent in halves', async () => {
    const { client, fetch } = makeClient({
      fetch: fakeFetch((call) =>
        call.events.length > 2 ? error(413, 'payload_too_large') : ok(call.events.length),
      ),
    });
    for (let i = 0; i < 5; i++) client.track('e', { i });
    await client.flush();
    assert.deepEqual(
      fetch.calls.map((c) => c.events.length),
      [5, 2, 3, 1, 2],
    );
    assert.deepEqual(client.stats(), { queued: 0, inFlight: 0, sent: 5, failed: 0, dropped: 0, retries: 0 });
    await client.shutdown();
  });

  test('methods are bound', async () => {
    const { client, fetch } = makeClient();
    const { track, pageView, flush, stats } = client;
    track('a');
    pageView('/x');
    await flush();
    assert.equal(fetch.calls[0].events.length, 2);
    assert.equal(stats().sent, 2);
    await client.shutdown();
  });
});

describe('retries', () => {
  test('5xx is retried with the same body (same eventIds): never counted twice', async () => {
    const { client, fetch, errors } = makeClient({
      fetch: fakeFetch((call, i) => (i < 2 ? error(503, 'unavailable') : ok(call.events.length))),
    });
    client.track('a');
    client.track('b');
    await client.flush();
    assert.equal(fetch.calls.length, 3);
    assert.equal(fetch.calls[1].body, fetch.calls[0].body);
    assert.equal(fetch.calls[2].body, fetch.calls[0].body);
    assert.deepEqual(client.stats(), { queued: 0, inFlight: 0, sent: 2, failed: 0, dropped: 0, retries: 2 });
    assert.equal(errors.length, 0);
    await client.shutdown();
  });

  test('network errors are retried', async () => {
    const { client, fetch } = makeClient({
      fetch: fakeFetch((call, i) => (i === 0 ? new TypeError('fetch failed') : ok(call.events.length))),
    });
    client.track('a');
    await client.flush();
    assert.equal(fetch.calls.length, 2);
    assert.equal(client.stats().sent, 1);
    await client.shutdown();
  });

  test('a request that takes longer than timeout is aborted and retried', async () => {
    const signals = [];
    const { client, fetch } = makeClient({
      timeout: 50,
      fetch: fakeFetch((call, i) => {
        signals.push(call.init.signal);
        return i === 0 ? new Promise(() => {}) : ok(call.events.length);
      }),
    });
    client.track('a');
    const t0 = Date.now();
    await client.flush();
    assert.ok(Date.now() - t0 >= 45);
    assert.equal(fetch.calls.length, 2);
    assert.equal(signals[0].aborted, true, 'the first request was aborted');
    assert.equal(client.stats().sent, 1);
    await client.shutdown();
  });

  test('429 waits for Retry-After (seconds)', async () => {
    const { client, fetch } = makeClient({
      retryBaseDelay: 1,
      fetch: fakeFetch((call, i) =>
        i === 0 ? error(429, 'rate_limited', 'slow down', { 'Retry-After': '1' }) : ok(call.events.length),
      ),
    });
    client.track('a');
    await client.flush();
    assert.equal(fetch.calls.length, 2);
    const gap = fetch.calls[1].at - fetch.calls[0].at;
    assert.ok(gap >= 990, `waited ${gap} ms`);
    assert.ok(gap < 3000, `waited ${gap} ms`);
    assert.equal(client.stats().sent, 1);
    await client.shutdown();
  });

  test('Retry-After as an HTTP date', async () => {
    const { client, fetch } = makeClient({
      fetch: fakeFetch((call, i) =>
        i === 0
          ? error(503, 'unavailable', 'later', { 'Retry-After': new Date(Date.now() + 1500).toUTCString() })
          : ok(call.events.length),
      ),
    });
    client.track('a');
    await client.flush();
    const gap = fetch.calls[1].at - fetch.calls[0].at;
    // HTTP dates have whole seconds: the wait is between 0.5 and 1.5 s.
    assert.ok(gap >= 400 && gap < 2500, `waited ${gap} ms`);
    await client.shutdown();
  });

  test('a Retry-After longer than retryMaxDelay (quota exceeded) gives the batch up at once', async () => {
    const { client, fetch, errors } = makeClient({
      fetch: fakeFetch(() => error(429, 'quota_exceeded', 'monthly quota reached', { 'Retry-After': '86400' })),
    });
    client.track('a');
    client.track('b');
    await client.flush();
    assert.equal(fetch.calls.length, 1);
    assert.equal(errors.length, 1);
    assert.equal(errors[0].code, 'quota_exceeded');
    assert.equal(errors[0].status, 429);
    assert.equal(errors[0].count, 2);
    assert.match(errors[0].message, /monthly quota reached/);
    assert.deepEqual(client.stats(), { queued: 0, inFlight: 0, sent: 0, failed: 2, dropped: 0, retries: 0 });
    await client.shutdown();
  });

  for (const [status, code] of [
    [400, 'invalid_request'],
    [401, 'invalid_api_key'],
    [403, 'forbidden'],
    [404, 'not_found'],
  ]) {
    test(`${status} ${code} is not retried and is reported`, async () => {
      const { client, fetch, errors } = makeClient({
        fetch: fakeFetch(() => error(status, code, 'nope')),
      });
      client.track('a');
      await client.flush();
      assert.equal(fetch.calls.length, 1);
      assert.equal(errors.length, 1);
      assert.equal(errors[0].name, 'SvcError');
      assert.equal(errors[0].code, code);
      assert.equal(errors[0].status, status);
      assert.equal(errors[0].count, 1);
      assert.deepEqual(client.stats(), { queued: 0, inFlight: 0, sent: 0, failed: 1, dropped: 0, retries: 0 });
      await client.shutdown();
    });
  }

  test('a 4xx without a JSON body is reported with its status', async () => {
    const { client, errors } = makeClient({
      fetch: fakeFetch(() => new Response('<html>bad gateway config</html>', { status: 418 })),
    });
    client.track('a');
    await client.flush();
    assert.equal(errors[0].code, 'http_418');
    assert.equal(errors[0].status, 418);
  });

  test('retries stop after maxRetries and the batch is reported', async () => {
    const { client, fetch, errors } = makeClient({
      maxRetries: 2,
      fetch: fakeFetch(() => error(500, 'internal')),
    });
    client.track('a');
    client.track('b');
    await client.flush();
    assert.equal(fetch.calls.length, 3);
    assert.equal(errors.length, 1);
    assert.equal(errors[0].code, 'retries_exhausted');
    assert.equal(errors[0].count, 2);
    assert.equal(errors[0].cause.code, 'internal');
    assert.deepEqual(client.stats(), { queued: 0, inFlight: 0, sent: 0, failed: 2, dropped: 0, retries: 2 });
    await client.shutdown();
  });

  test('backoff is exponential, capped, with full jitter', async () => {
    // Math.random() = 1: the largest wait of each step: base * 2^n capped at retryMaxDelay.
    Math.random = () => 0.999999;
    const { client, fetch } = makeClient({
      maxRetries: 4,
      retryBaseDelay: 40,
      retryMaxDelay: 200,
      fetch: fakeFetch((call, i) => (i < 4 ? error(502, 'bad_gateway') : ok(call.events.length))),
    });
    client.track('a');
    await client.flush();
    const gaps = fetch.calls.slice(1).map((c, i) => c.at - fetch.calls[i].at);
    const expected = [40, 80, 160, 200];
    gaps.forEach((g, i) => assert.ok(g >= expected[i] - 5 && g < expected[i] + 150, `gaps ${gaps} vs ${expected}`));

    // Math.random() = 0: no wait at all: the jitter spans the whole range from 0.
    Math.random = () => 0;
    const b = makeClient({
      maxRetries: 4,
      retryBaseDelay: 1000,
      fetch: fakeFetch((call, i) => (i < 4 ? error(502, 'bad_gateway') : ok(call.events.length))),
    });
    b.client.track('a');
    const t0 = Date.now();
    await b.client.flush();
    assert.ok(Date.now() - t0 < 500);
    assert.equal(b.fetch.calls.length, 5);
    await client.shutdown();
    await b.client.shutdown();
  });

  test('events the service rejects in a batch are reported, not retried', async () => {
    const { client, fetch, errors } = makeClient({
      fetch: fakeFetch((call) =>
        ok(call.events.length - 1, {
          rejected: [{ index: 1, error: { code: 'invalid_request', message: '`ts` is more than 7 days in the past' } }],
        }),
      ),
    });
    client.track('a');
    client.track('b');
    client.track('c');
    await client.flush();
    assert.equal(fetch.calls.length, 1);
    assert.equal(errors.length, 1);
    assert.equal(errors[0].code, 'events_rejected');
    assert.equal(errors[0].count, 1);
    assert.deepEqual(errors[0].rejected, [
      {
        eventId: fetch.calls[0].events[1].eventId,
        event: 'b',
        error: { code: 'invalid_request', message: '`ts` is more than 7 days in the past' },
      },
    ]);
    assert.deepEqual(client.stats(), { queued: 0, inFlight: 0, sent: 2, failed: 1, dropped: 0, retries: 0 });
    await client.shutdown();
  });

  test('a batch refused as a whole lists each event\'s error', async () => {
    const { client, fetch, errors } = makeClient({
      fetch: fakeFetch(() =>
        json(400, {
          ok: false,
          error: { code: 'invalid_request', message: 'no event of the batch was accepted: `ts` is more than 7 days in the past' },
          accepted: 0,
          rejected: [
            { index: 0, error: { code: 'invalid_request', message: '`ts` is more than 7 days in the past' } },
            { index: 1, error: { code: 'invalid_request', message: '`ts` is more than 7 days in the past' } },
          ],
        }),
      ),
    });
    client.track('a');
    client.track('b');
    await client.flush();
    assert.equal(fetch.calls.length, 1);
    assert.equal(errors[0].code, 'invalid_request');
    assert.equal(errors[0].count, 2);
    assert.deepEqual(
      errors[0].rejected.map((r) => [r.event, r.eventId]),
      fetch.calls[0].events.map((e) => [e.event, e.eventId]),
    );
    assert.equal(client.stats().failed, 2);
  });

  test('an onError that throws does not break the client', async () => {
    const { client, fetch } = makeClient({
      onError: () => {
        throw new Error('boom');
      },
      fetch: fakeFetch((call, i) => (i === 0 ? error(400, 'invalid_request') : ok(call.events.length))),
    });
    client.track('a');
    await client.flush();
    client.track('b');
    await client.flush();
    assert.equal(fetch.calls.length, 2);
    assert.equal(client.stats().sent, 1);
  });

  test('without onError, failures go to console.warn', async () => {
    const warned = [];
    const warn = console.warn;
    console.warn = (...a) => warned.push(a.join(' '));
    try {
      const { client } = makeClient({ onError: undefined, fetch: fakeFetch(() => error(401, 'invalid_api_key', 'unknown key')) });
      client.track('a');
      await client.flush();
      assert.equal(warned.length, 1);
      assert.match(warned[0], /^svc: .*invalid_api_key.*unknown key/);
    } finally {
      console.warn = warn;
    }
  });
});

describe('the bounded queue', () => {
  test('past maxQueueSize the oldest events are dropped, counted and reported once', async () => {
    const { client, fetch, errors } = makeClient({ maxQueueSize: 5, maxBatchSize: 1000 });
    for (let i = 0; i < 8; i++) client.track('e', { i });
    assert.equal(client.stats().dropped, 3);
    assert.equal(client.stats().queued, 5);
    await sleep(0);
    assert.equal(errors.length, 1, 'one warning for a burst');
    assert.equal(errors[0].code, 'queue_overflow');
    assert.equal(errors[0].count, 3);
    assert.match(errors[0].message, /dropped the 3 oldest/);
    await client.flush();
    assert.deepEqual(
      fetch.calls[0].events.map((e) => e.properties.i),
      [3, 4, 5, 6, 7],
    );
    assert.deepEqual(client.stats(), { queued: 0, inFlight: 0, sent: 5, failed: 0, dropped: 3, retries: 0 });
    await client.shutdown();
  });

  test('the queue stays bounded while the service is down', async () => {
    let up = false;
    const { client, fetch, errors } = makeClient({
      maxQueueSize: 100,
      maxBatchSize: 10,
      retryBaseDelay: 5,
      retryMaxDelay: 5,
      maxRetries: 1000,
      fetch: fakeFetch((call) => (up ? ok(call.events.length) : error(503, 'unavailable'))),
    });
    for (let i = 0; i < 1000; i++) client.track('e', { i });
    const s = client.stats();
    assert.equal(s.queued, 100);
    assert.equal(s.inFlight, 10);
    assert.equal(s.dropped, 890);
    up = true;
    await client.flush();
    assert.ok(fetch.calls.length > 11, 'retried while down');
    assert.equal(client.stats().sent, 110);
    assert.equal(client.stats().dropped, 890);
    assert.ok(errors.every((e) => e.code === 'queue_overflow'));
    await client.shutdown();
  });
});

describe('shutdown', () => {
  test('sends what is queued, then refuses new events', async () => {
    const { client, fetch, errors } = makeClient({ flushInterval: 60_000 });
    client.track('a');
    await client.shutdown();
    assert.equal(fetch.calls.length, 1);
    client.track('late');
    assert.equal(errors.length, 1);
    assert.equal(errors[0].code, 'client_closed');
    await client.flush();
    assert.equal(fetch.calls.length, 1);
    assert.deepEqual(client.stats(), { queued: 0, inFlight: 0, sent: 1, failed: 1, dropped: 0, retries: 0 });
    await client.shutdown(); // twice is fine
  });

  test('gives up after its timeout when the service does not answer', async () => {
    const { client, errors } = makeClient({ fetch: fakeFetch(() => new Promise(() => {})), timeout: 60_000, maxBatchSize: 2 });
    for (let i = 0; i < 5; i++) client.track('e');
    const t0 = Date.now();
    await client.shutdown({ timeout: 100 });
    const took = Date.now() - t0;
    assert.ok(took >= 90 && took < 1000, `took ${took} ms`);
    assert.equal(client.stats().failed, 5);
    assert.equal(client.stats().queued + client.stats().inFlight, 0);
    assert.ok(errors.length >= 1 && errors.every((e) => e.code === 'shutdown_timeout'));
    assert.equal(errors.reduce((n, e) => n + e.count, 0), 5);
  });

  test('does not wait out a long backoff', async () => {
    const { client, errors } = makeClient({
      retryBaseDelay: 20_000,
      fetch: fakeFetch(() => error(503, 'unavailable')),
    });
    Math.random = () => 0.999;
    client.track('e');
    const t0 = Date.now();
    await client.shutdown({ timeout: 200 });
    assert.ok(Date.now() - t0 < 1000);
    assert.equal(client.stats().failed, 1);
    assert.equal(errors[0].code, 'shutdown_timeout');
  });
});

describe('in a Node process', () => {
  function run(source) {
    return spawnSync(process.execPath, ['--input-type=module', '-e', source], {
      cwd: here,
      encoding: 'utf8',
      timeout: 20_000,
    });
  }

  test('the flush timer does not keep the process alive; queued events are sent before exit', () => {
    const source = `
      import { createClient } from '../dist/esm/index.js';
      const t0 = Date.now();
      const c = createClient({ apiKey: 'k', projectId: 'p', endpoint: 'http://svc.test/analytics',
        flushInterval: 60000,
        fetch: async (u, init) => { console.log('sent', JSON.parse(init.body).events.length);
          return new Response('{"ok":true}', { status: 200 }); } });
      c.track('a'); c.track('b');
      process.on('exit', () => console.log('exit after', Date.now() - t0 < 5000 ? 'less than 5 s' : 'too long'));
    `;
    const r = run(source);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, 'sent 2\nexit after less than 5 s\n');
  });

  test('without crypto.randomUUID (Node 18), eventIds are still random v4 UUIDs', () => {
    const r = spawnSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `
        Object.defineProperty(globalThis, 'crypto', { value: undefined, configurable: true });
        const { createClient } = await import('../dist/esm/index.js');
        const ids = [];
        const c = createClient({ apiKey: 'k', projectId: 'p', endpoint: 'http://svc.test/analytics', flushInterval: 0,
          fetch: async (u, init) => { for (const e of JSON.parse(init.body).events) ids.push(e.eventId);
            return new Response('{"ok":true}', { status: 200 }); } });
        for (let i = 0; i < 1000; i++) c.track('a');
        await c.shutdown();
        console.log(JSON.stringify({ n: new Set(ids).size, sample: ids[0], crypto: typeof globalThis.crypto }));
      `,
      ],
      { cwd: here, encoding: 'utf8', timeout: 20_000 },
    );
    assert.equal(r.status, 0, r.stderr);
    const out = JSON.parse(r.stdout);
    assert.equal(out.crypto, 'undefined');
    assert.equal(out.n, 1000);
    assert.match(out.sample, UUID_V4);
  });
});

test('the CommonJS build works the same', () => {
  const r = spawnSync(
    process.execPath,
    [
      '-e',
      `
      const { createClient, SvcError, VERSION } = require(${JSON.stringify(join(here, '..', 'dist', 'cjs', 'index.js'))});
      const c = createClient({ apiKey: 'k', projectId: 'p', endpoint: 'http://svc.test/analytics', flushInterval: 0,
        fetch: async (u, init) => { console.log(JSON.parse(init.body).events[0].event);
          return new Response('{"ok":true}', { status: 200 }); } });
      c.pageView('/cjs');
      c.flush().then(() => console.log(typeof SvcError, VERSION));
    `,
    ],
    { encoding: 'utf8', timeout: 20_000 },
  );
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, 'page_view\nfunction 0.1.0\n');
});
