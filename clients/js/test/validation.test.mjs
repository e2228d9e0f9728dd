// Invalid arguments throw a TypeError at the call, and nothing is queued.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createClient } from '../dist/esm/index.js';
import { ENDPOINT, fakeFetch, makeClient } from './helpers.mjs';

/** Asserts that fn throws a TypeError whose message matches re, and that nothing was queued. */
function throwsType(client, fn, re) {
  const before = client.stats().queued;
  assert.throws(fn, (e) => {
    assert.equal(e.constructor, TypeError);
    assert.match(e.message, /^svc: /);
    if (re) assert.match(e.message, re);
    return true;
  });
  assert.equal(client.stats().queued, before, 'nothing queued');
}

const base = { apiKey: 'svc_live_k', projectId: 'svc_proj_p', endpoint: ENDPOINT, fetch: fakeFetch() };

describe('createClient', () => {
  const bad = [
    [undefined, /options must be an object/],
    [{ ...base, apiKey: '' }, /apiKey must be a non-empty string/],
    [{ ...base, apiKey: undefined }, /apiKey/],
    [{ ...base, apiKey: 'svc_live_k\n' }, /apiKey must be printable ASCII without spaces/],
    [{ ...base, projectId: 42 }, /projectId must be a non-empty string, got 42/],
    [{ ...base, endpoint: undefined }, /endpoint/],
    [{ ...base, endpoint: 'not a url' }, /endpoint must be a URL/],
    [{ ...base, maxBatchSize: 0 }, /maxBatchSize must be between 1 and 1000/],
    [{ ...base, maxBatchSize: 1001 }, /maxBatchSize must be between 1 and 1000/],
    [{ ...base, maxBatchSize: 2.5 }, /maxBatchSize must be a whole number/],
    [{ ...base, flushInterval: -1 }, /flushInterval must be at least 0/],
    [{ ...base, maxQueueSize: 0 }, /maxQueueSize must be at least 1/],
    [{ ...base, timeout: Infinity }, /timeout must be a finite number/],
    [{ ...base, fetch: 'fetch' }, /fetch must be a function/],
    [{ ...base, onError: {} }, /onError must be a function/],
    [{ ...base, sessionId: 'x'.repeat(129) }, /sessionId must be at most 128 characters/],
  ];
  for (const [opts, re] of bad) {
    test(`refuses ${JSON.stringify(opts && Object.fromEntries(Object.entries(opts).filter(([k]) => !(k in base) || base[k] !== opts[k])))}`, () => {
      assert.throws(() => createClient(opts), (e) => e instanceof TypeError && re.test(e.message));
    });
  }

  test('uses the global fetch by default, late-bound', async () => {
    const real = globalThis.fetch;
    const seen = [];
    const c = createClient({ ...base, fetch: undefined, flushInterval: 0 });
    globalThis.fetch = async (url, init) => {
      seen.push([url, init.method]);
      return new Response('{"ok":true}', { status: 200 });
    };
    try {
      c.track('a');
      await c.flush();
      assert.deepEqual(seen, [[ENDPOINT, 'POST']]);
    } finally {
      globalThis.fetch = real;
      await c.shutdown();
    }
  });
});

describe('track', () => {
  const { client } = makeClient();
  const cases = [
    ['an empty name', () => client.track(''), /event name must be a non-empty string/],
    ['a blank name', () => client.track('   '), /event name must not be blank/],
    ['a name over 200 characters', () => client.track('x'.repeat(201)), /at most 200 characters, got 201/],
    ['a name that is not a string', () => client.track(42), /event name must be a non-empty string, got 42/],
    ['properties as an array', () => client.track('e', [1]), /properties must be a plain object, got an array/],
    ['properties as a string', () => client.track('e', 'plan=pro'), /properties must be a plain object/],
    ['properties as a Map', () => client.track('e', new Map()), /properties must be a plain object, got a Map/],
    ['properties as a class instance', () => client.track('e', new (class Plan {})()), /got a Plan/],
    ['51 properties', () => client.track('e', Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, i]))), /at most 50 keys/],
    ['a nested object', () => client.track('e', { user: { id: 1 } }), /properties.user must be a string, number, boolean or null, got an object/],
    ['an array that is not items', () => client.track('e', { tags: ['a'] }), /properties.tags must be/],
    ['NaN', () => client.track('e', { v: NaN }), /properties.v must be a finite number, got NaN/],
    ['Infinity', () => client.track('e', { v: Infinity }), /finite number/],
    ['a Date', () => client.track('e', { at: new Date() }), /properties.at must be .* got a Date/],
    ['a function', () => client.track('e', { f() {} }), /properties.f must be/],
    ['a bigint', () => client.track('e', { n: 1n }), /properties.n must be/],
    ['a string over 2048 characters', () => client.track('e', { s: 'x'.repeat(2049) }), /properties.s must be at most 2048 characters/],
    ['a property name over 200 characters', () => client.track('e', { ['k'.repeat(201)]: 1 }), /property names must be 1-200 characters/],
    ['nested items', () => client.track('e', { items: [{ item_id: 'a', tags: ['x'] }] }), /items\[0\].tags must be/],
    ['items that are not objects', () => client.track('e', { items: ['sku'] }), /items\[0\] must be a plain object/],
    ['items over 32768 characters of JSON', () => client.track('e', { items: Array.from({ length: 100 }, (_, i) => ({ item_id: `sku${i}`, item_name: 'n'.repeat(400) })) }), /items must be at most 32768 characters once encoded/],
    ['201 items', () => client.track('e', { items: Array.from({ length: 201 }, () => ({ item_id: 'a' })) }), /at most 200 items/],
    ['options that are not an object', () => client.track('e', {}, 'opts'), /options must be a plain object/],
    ['a url that is neither a URL nor a path', () => client.track('e', {}, { url: 'pricing' }), /url must be a full URL .* or a path/],
    ['a url over 2048 characters', () => client.track('e', {}, { url: '/' + 'x'.repeat(2048) }), /url must be at most 2048/],
    ['a timestamp in seconds', () => client.track('e', {}, { timestamp: 1700000000 }), /looks like seconds/],
    ['an invalid Date', () => client.track('e', {}, { timestamp: new Date('nope') }), /timestamp must be a valid Date/],
    ['a sessionId over 128 characters', () => client.track('e', {}, { sessionId: 's'.repeat(129) }), /sessionId must be at most 128/],
    ['an empty eventId', () => client.track('e', {}, { eventId: '' }), /eventId must be a non-empty string/],
    ['an ip that is not an address', () => client.track('e', {}, { ip: 'localhost' }), /ip must be an IPv4 or IPv6 address/],
  ];
  for (const [what, fn, re] of cases) test(`throws for ${what}`, () => throwsType(client, fn, re));

  test('accepts flat values, null, items, and leaves out undefined', async () => {
    const { client: c, fetch } = makeClient();
    const props = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, i]));
    c.track('e', props);
    c.track('e', { s: 'x', n: 1.5, b: false, z: null, u: undefined, items: [{ item_id: 'a', price: 1 }] });
    c.track('e', {});
    c.track('e', null);
    c.track('e', Object.assign(Object.create(null), { a: 1 }));
    await c.flush();
    const ev = fetch.calls[0].events;
    assert.equal(Object.keys(ev[0].properties).length, 50);
    assert.deepEqual(ev[1].properties, { s: 'x', n: 1.5, b: false, z: null, items: [{ item_id: 'a', price: 1 }] });
    assert.equal('properties' in ev[2], false, 'empty properties are left out');
    assert.equal('properties' in ev[3], false);
    assert.deepEqual(ev[4].properties, { a: 1 });
  });

  test('later changes to the properties object do not change the event', async () => {
    const { client: c, fetch } = makeClient();
    const props = { plan: 'pro' };
    c.track('e', props);
    props.plan = 'free';
    await c.flush();
    assert.equal(fetch.calls[0].events[0].properties.plan, 'pro');
  });

  test('per-call options: url, referrer, sessionId, userAgent, ip, timestamp, eventId', async () => {
    const { client: c, fetch } = makeClient({ sessionId: 'client-session' });
    const at = Date.now() - 60_000;
    c.track('a');
    c.track('b', { x: 1 }, {
      url: 'https://shop.example/cart',
      referrer: 'https://google.com/',
      sessionId: 's-42',
      userAgent: 'Mozilla/5.0 (X11; Linux x86_64)',
      ip: '203.0.113.9',
      timestamp: new Date(at),
      eventId: 'order-1001',
    });
    c.track('c', {}, { userAgent: 'u'.repeat(2000), referrer: 'https://r.example/' + 'r'.repeat(3000) });
    c.track('d', {}, { userAgent: null, referrer: '', ip: null, sessionId: '' });
    await c.flush();
    const [a, b, cc, d] = fetch.calls[0].events;
    assert.deepEqual(Object.keys(d), ['event', 'url', 'sessionId', 'projectId', 'ts', 'eventId'], 'null and "" context is left out');
    assert.equal(d.sessionId, 'client-session');
    assert.equal(a.sessionId, 'client-session');
    assert.equal(a.url, '/', 'outside a browser the url defaults to "/"');
    assert.deepEqual(b, {
      event: 'b',
      url: 'https://shop.example/cart',
      sessionId: 's-42',
      projectId: 'svc_proj_test',
      properties: { x: 1 },
      referrer: 'https://google.com/',
      ts: at,
      eventId: 'order-1001',
      userAgent: 'Mozilla/5.0 (X11; Linux x86_64)',
      ip: '203.0.113.9',
    });
    assert.equal(cc.userAgent.length, 1024, 'user agents are cut to 1024 characters');
    assert.equal(cc.referrer.length, 2048, 'referrers are cut to 2048 characters');
  });

  test('the largest event the service takes fits in a request', async () => {
    const { client: c, fetch } = makeClient();
    const props = Object.fromEntries(Array.from({ length: 49 }, (_, i) => [`k${i}`, '\u{1F600}'.repeat(1024)]));
    props.items = Array.from({ length: 200 }, (_, i) => ({ item_id: `s${i}`, n: 'x'.repeat(120) }));
    c.track('e'.repeat(200), props, { url: '/' + 'u'.repeat(2047), userAgent: 'a'.repeat(1024), referrer: '/r' });
    await c.flush();
    assert.equal(fetch.calls.length, 1);
    assert.ok(Buffer.byteLength(fetch.calls[0].body) < 300_000);
  });
});

describe('pageView', () => {
  const { client } = makeClient();
  test('requires a url outside a browser', () => throwsType(client, () => client.pageView(), /url is required outside a browser/));
  test('refuses a url over 2048 characters', () => throwsType(client, () => client.pageView('/' + 'p'.repeat(2048)), /at most 2048/));
  test('refuses a url in the options', () => throwsType(client, () => client.pageView('/a', { url: '/b' }), /first argument/));
  test('sends page_view with the url and an optional referrer', async () => {
    const { client: c, fetch } = makeClient();
    c.pageView('/pricing');
    c.pageView('https://acme.example/blog?utm_source=news', { referrer: 'https://news.ycombinator.com/' });
    await c.flush();
    const [a, b] = fetch.calls[0].events;
    assert.equal(a.event, 'page_view');
    assert.equal(a.url, '/pricing');
    assert.equal('referrer' in a, false);
    assert.equal(b.url, 'https://acme.example/blog?utm_source=news');
    assert.equal(b.referrer, 'https://news.ycombinator.com/');
  });
});

describe('purchase', () => {
  const { client } = makeClient();
  const item = { item_id: 'sku1', price: 10, quantity: 3 };
  const cases = [
    ['an empty transaction id', () => client.purchase('', 30, 'EUR', [item]), /transactionId must be a non-empty string/],
    ['a NaN value', () => client.purchase('T1', NaN, 'EUR', [item]), /value must be a finite number, got NaN/],
    ['an infinite value', () => client.purchase('T1', Infinity, 'EUR', [item]), /value must be a finite number/],
    ['a value as a string', () => client.purchase('T1', '30', 'EUR', [item]), /value must be a finite number, got "30"/],
    ['a negative value', () => client.purchase('T1', -1, 'EUR', [item]), /value must not be negative/],
    ['a bad currency', () => client.purchase('T1', 30, 'EURO', [item]), /three-letter ISO 4217/],
    ['items that are not an array', () => client.purchase('T1', 30, 'EUR', item), /items must be an array/],
    ['a negative price', () => client.purchase('T1', 30, 'EUR', [{ ...item, price: -10 }]), /items\[0\].price must not be negative, got -10/],
    ['a non-finite price', () => client.purchase('T1', 30, 'EUR', [{ ...item, price: NaN }]), /items\[0\].price must be a finite number/],
    ['a negative quantity', () => client.purchase('T1', 30, 'EUR', [{ ...item, quantity: -1 }]), /items\[0\].quantity must not be negative/],
    ['a fractional quantity', () => client.purchase('T1', 30, 'EUR', [{ ...item, quantity: 1.5 }]), /items\[0\].quantity must be a whole number, got 1.5/],
    ['an item without item_id or item_name', () => client.purchase('T1', 30, 'EUR', [{ price: 1 }]), /items\[0\] needs an item_id or an item_name/],
    ['a negative tax', () => client.purchase('T1', 30, 'EUR', [item], { tax: -1 }), /tax must not be negative/],
  ];
  for (const [what, fn, re] of cases) test(`throws for ${what}`, () => throwsType(client, fn, re));

  test('sends GA4 purchase; the currency is upper-cased', async () => {
    const { client: c, fetch } = makeClient();
    c.purchase('T2', 12.5, 'usd', [{ item_name: 'Shirt', price: 12.5 }], { coupon: 'SUMMER', shipping: 0, tax: 2.1 });
    await c.flush();
    assert.deepEqual(fetch.calls[0].events[0].properties, {
      transaction_id: 'T2',
      value: 12.5,
      currency: 'USD',
      coupon: 'SUMMER',
      shipping: 0,
      tax: 2.1,
      items: [{ item_name: 'Shirt', price: 12.5 }],
    });
  });
});

describe('captureException', () => {
  test('sends exception with description "Name: message", fatal and the stack', async () => {
    const { client: c, fetch } = makeClient();
    const e = new TypeError('x is not a function');
    c.captureException(e);
    c.captureException(new RangeError(''), { fatal: true });
    c.captureException('plain string thrown');
    c.captureException({ code: 42 });
    c.captureException(undefined);
    const long = new Error('deep');
    long.stack = 'Error: deep\n' + '    at f (app.js:1:1)\n'.repeat(500);
    c.captureException(long);
    await c.flush();
    const [a, b, s, o, u, l] = fetch.calls[0].events;
    assert.equal(a.event, 'exception');
    assert.deepEqual(Object.keys(a.properties), ['description', 'fatal', 'stack']);
    assert.equal(a.properties.description, 'TypeError: x is not a function');
    assert.equal(a.properties.fatal, false);
    assert.equal(a.properties.stack, e.stack);
    assert.equal(b.properties.description, 'RangeError');
    assert.equal(b.properties.fatal, true);
    assert.deepEqual(s.properties, { description: 'plain string thrown', fatal: false });
    assert.deepEqual(o.properties, { description: '{"code":42}', fatal: false });
    assert.deepEqual(u.properties, { description: 'undefined', fatal: false });
    assert.equal(l.properties.stack.length, 2048, 'the stack is cut to what the service stores');
    assert.ok(long.stack.startsWith(l.properties.stack));
  });

  test('throws for a fatal that is not a boolean', () => {
    const { client: c } = makeClient();
    throwsType(c, () => c.captureException(new Error('x'), { fatal: 'yes' }), /fatal must be a boolean/);
  });
});
