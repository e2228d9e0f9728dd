// The client in a web page: globals as a browser has them (this file runs in its own process).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fakeFetch, makeClient } from './helpers.mjs';

const listeners = {};
globalThis.location = { href: 'https://acme.example/pricing?utm_source=news' };
globalThis.document = {
  referrer: 'https://www.google.com/',
  visibilityState: 'visible',
  addEventListener: (type, fn) => ((listeners[`document:${type}`] ??= []).push(fn)),
  removeEventListener: (type, fn) => (listeners[`document:${type}`] = (listeners[`document:${type}`] ?? []).filter((f) => f !== fn)),
};
globalThis.addEventListener = (type, fn) => ((listeners[`window:${type}`] ??= []).push(fn));
globalThis.removeEventListener = (type, fn) => (listeners[`window:${type}`] = (listeners[`window:${type}`] ?? []).filter((f) => f !== fn));
const fire = (key) => (listeners[key] ?? []).forEach((f) => f());

test('pageView() takes the URL and referrer of the page; track() the URL', async () => {
  const { client, fetch } = makeClient();
  client.pageView();
  client.pageView('/spa/route', { referrer: 'https://acme.example/pricing' });
  client.track('cta_click', { id: 'hero' });
  await client.flush();
  const [a, b, c] = fetch.calls[0].events;
  assert.equal(a.url, 'https://acme.example/pricing?utm_source=news');
  assert.equal(a.referrer, 'https://www.google.com/');
  assert.equal(b.url, '/spa/route');
  assert.equal(b.referrer, 'https://acme.example/pricing');
  assert.equal(c.url, 'https://acme.example/pricing?utm_source=news');
  assert.equal('referrer' in c, false);
  await client.shutdown();
});

test('a long location.href is cut to 2048 characters rather than refused', async () => {
  const saved = globalThis.location.href;
  globalThis.location.href = 'https://acme.example/?q=' + 'x'.repeat(5000);
  try {
    const { client, fetch } = makeClient();
    client.pageView();
    await client.flush();
    assert.equal(fetch.calls[0].events[0].url.length, 2048);
  } finally {
    globalThis.location.href = saved;
  }
});

test('when the page is hidden, the queue is sent at once with keepalive', async () => {
  const before = (listeners['document:visibilitychange'] ?? []).length;
  const { client, fetch } = makeClient({ flushInterval: 60_000 });
  assert.equal(listeners['document:visibilitychange'].length, before + 1);
  client.track('a');
  client.track('b');
  assert.equal(fetch.calls.length, 0);
  document.visibilityState = 'hidden';
  fire('document:visibilitychange');
  await new Promise((r) => setTimeout(r, 10));
  assert.equal(fetch.calls.length, 1);
  assert.equal(fetch.calls[0].init.keepalive, true);
  assert.equal(fetch.calls[0].events.length, 2);

  document.visibilityState = 'visible';
  fire('document:visibilitychange');
  client.track('c');
  fire('window:pagehide');
  await new Promise((r) => setTimeout(r, 10));
  assert.equal(fetch.calls.length, 2);
  assert.equal(fetch.calls[1].init.keepalive, true);

  await client.shutdown();
  assert.equal(listeners['document:visibilitychange'].length, before, 'shutdown removes its listeners');
});

test('a failed keepalive request is retried without keepalive', async () => {
  const { client, fetch } = makeClient({
    fetch: fakeFetch((call, i) => (i === 0 ? new TypeError('keepalive refused') : new Response('{"ok":true}'))),
  });
  client.track('a');
  fire('window:pagehide');
  await client.flush();
  assert.deepEqual(
    fetch.calls.map((c) => c.init.keepalive),
    [true, undefined],
  );
  await client.shutdown();
});
